"""The run report's inline stylesheet: light and dark colour schemes, print rules, chart colours.

The SVG charts carry classes, not colours, so one stylesheet themes both the page and its charts.
"""

from __future__ import annotations

from typing import Final

CSS: Final = """
:root{--bg:#f5f6f8;--card:#fff;--fg:#1c2330;--muted:#5d6778;--border:#e1e5eb;--accent:#2563eb;
--accent2:#0f9d76;--grid:#eceff3;--err:#c62828;--warn:#a86400;--info:#2f6db5;--ok:#1f7a3a;
--final:#b5359b;--resume:#d9480f;--row:#f8f9fb;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#0f1318;--card:#171c23;--fg:#e2e7ee;
--muted:#98a3b4;--border:#2a313c;--accent:#79a9ff;--accent2:#3fcf9f;--grid:#232a34;--err:#ff7b72;
--warn:#e3a341;--info:#7cb1ff;--ok:#56d364;--final:#f08be0;--resume:#ff9a5c;--row:#1b2129}}
*{box-sizing:border-box}
body{margin:0;padding:24px clamp(12px,3vw,40px);background:var(--bg);color:var(--fg);
font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif}
header,main,footer{max-width:1280px;margin:0 auto}
h1{font-size:22px;margin:0 0 12px}h1 .run{color:var(--accent);overflow-wrap:break-word}
h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--border)}
h3{font-size:14px;margin:0;font-weight:600;overflow-wrap:break-word}
code,pre{font-family:ui-monospace,"Liberation Mono",Menlo,monospace;font-size:12.5px}
a{color:var(--accent)}
.facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:0 0 12px}
.facts div{min-width:0}.facts dt{color:var(--muted);font-size:12px}
.facts dd{margin:0;font-weight:500;overflow-wrap:break-word}
.toc{display:flex;gap:16px;margin:8px 0}
.card{background:var(--card);border:1px solid var(--border);border-radius:8px;padding:12px 14px}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,420px),1fr));gap:14px}
figure{margin:0}
figcaption p{margin:2px 0 0;color:var(--muted);font-size:12.5px}
figcaption .ds{font-style:italic}
svg{display:block;width:100%;height:auto;margin-top:6px}
svg text{fill:var(--muted);font-size:13px;font-family:inherit}
svg.timeline text{font-size:12px}
svg .plot{fill:none;stroke:var(--border)}
svg .grid{stroke:var(--grid);stroke-width:1}
svg .line{fill:none;stroke:var(--accent);stroke-width:1.6;stroke-linejoin:round}
svg .pt{fill:var(--accent);stroke:var(--card);stroke-width:1}
svg .empty{font-size:13px}
svg .restart{stroke:var(--resume);stroke-dasharray:3 3;stroke-width:1}
svg .axis{stroke:var(--muted);stroke-width:1}
svg .ck-periodic{fill:var(--accent2);stroke:var(--card);stroke-width:1}
svg .ck-rolling{stroke:var(--muted);stroke-width:1.5}
svg .ck-final{fill:var(--final)}
svg .ck-resume{stroke:var(--resume);stroke-width:2;stroke-dasharray:4 2}
svg .ck-resume-label{fill:var(--resume);font-weight:600}
.legend{margin:6px 0 0;color:var(--muted);font-size:12.5px;display:flex;gap:18px}
.lg-periodic{color:var(--accent2)}.lg-final{color:var(--final)}.lg-resume{color:var(--resume)}
.notes{margin:6px 0 12px;padding-left:20px;color:var(--warn)}
.note,.unavailable{color:var(--muted)}
.resume strong{color:var(--resume)}
.verdict{font-size:15px;font-weight:600}.verdict.ok .word{color:var(--ok)}
.verdict.failed .word{color:var(--err)}.verdict .zero{color:var(--muted)}
.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}.sev-info{color:var(--info)}
.card+.scroll,.card+.note{margin-top:12px}
.scroll{overflow-x:auto;max-height:420px;overflow-y:auto;border:1px solid var(--border);
border-radius:8px;background:var(--card)}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th{position:sticky;top:0;background:var(--card);text-align:left;font-weight:600;
border-bottom:1px solid var(--border)}
th,td{padding:4px 10px;vertical-align:top;overflow-wrap:break-word}th{white-space:nowrap}
tbody tr:nth-child(even){background:var(--row)}
tr.is-resume td{font-weight:600;color:var(--resume)}
tr.is-resume td:first-child{box-shadow:inset 3px 0 var(--resume)}
.findings td:first-child{font-weight:600}
details{margin:8px 0}summary{cursor:pointer;font-weight:600}
.count{color:var(--muted);font-weight:400}
.grid{display:flex;flex-wrap:wrap;gap:4px;margin-top:8px}
.grid a{display:inline-block;min-width:3.2em;padding:1px 6px;text-align:center;text-decoration:none;
border:1px solid var(--border);border-radius:4px;background:var(--card);font-size:12px;
font-variant-numeric:tabular-nums}
.grid a:hover{border-color:var(--accent)}
.keys{display:flex;flex-wrap:wrap;gap:4px 10px}
.config pre{max-height:360px;overflow:auto;background:var(--card);border:1px solid var(--border);
border-radius:8px;padding:10px;white-space:pre-wrap}
footer{margin-top:32px;color:var(--muted);font-size:12px}
svg .whisker{stroke:var(--muted);stroke-width:1}
svg .iqr{fill:var(--accent);fill-opacity:.35;stroke:var(--accent);stroke-width:1}
svg .median{stroke:var(--fg);stroke-width:1.6}
tr.fail td{color:var(--err)}
.it-list{display:flex;flex-wrap:wrap;gap:4px;margin-top:8px}
.it-list a{display:inline-flex;gap:6px;align-items:baseline;padding:1px 7px;text-decoration:none;
border:1px solid var(--border);border-radius:4px;background:var(--card);font-size:12px;
font-variant-numeric:tabular-nums}
.it-list a.has-fail{border-color:var(--err)}
.it-list .it-detail{color:var(--muted)}
.it-list a.has-fail .it-detail{color:var(--err)}
.prompt-list{columns:2 320px;font-size:12.5px}
@media print{:root{--bg:#fff;--card:#fff;--fg:#000;--muted:#444;--border:#bbb;--grid:#e5e5e5;
--row:#f4f4f4}body{padding:0}.toc{display:none}.card,figure,tr{break-inside:avoid}
.scroll{max-height:none;overflow:visible}details>summary{list-style:none}}
"""
