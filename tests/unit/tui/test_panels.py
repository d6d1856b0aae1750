"""What ``rlio top`` draws as text: braille charts, bars, the usual keys, transcripts."""

from __future__ import annotations

from rlio.tui.braille import bars, line_chart
from rlio.tui.chat_text import transcript_text
from rlio.tui.feeds import Series
from rlio.tui.panels import chart_text, usual_keys


def test_a_chart_has_the_asked_size_and_draws_a_rising_line_bottom_left_to_top_right() -> None:
    """A rising series: dots in the bottom-left and top-right cells, none top-left."""
    rows = line_chart([(float(i), float(i)) for i in range(100)], 20, 4)
    assert len(rows) == 4 and all(len(r) == 20 for r in rows)
    assert rows[-1][0] != " " and rows[0][-1] != " " and rows[0][0] == " "


def test_a_chart_of_no_finite_point_is_blank() -> None:
    """NaN points only: an empty chart, no error."""
    assert line_chart([(0.0, float("nan"))], 5, 2) == [" " * 5] * 2


def test_bars_scale_to_the_largest_count() -> None:
    """The largest count fills the column; zero stays blank."""
    top, bottom = bars([0, 1, 4], 2)
    assert bottom[0] == " " and bottom[2] == "█" and top[2] == "█" and top[1] == " "


def test_a_series_keeps_at_most_its_cap_and_its_latest_point() -> None:
    """10,000 points into a series of cap 100: at most 100 kept, the last one among them, and
    a repeated step keeps its last value."""
    s = Series(cap=100)
    for i in range(10_000):
        s.add(i, float(i))
    assert len(s.xs) <= 100 and s.xs[-1] == 9999
    s.add(9999, -1.0)
    assert s.ys[-1] == -1.0


def test_the_usual_keys_are_found_by_their_real_names() -> None:
    """Reward, KL, entropy, learning rate, tokens, cost and time are charted when logged; an
    evaluator's key is not taken for the training one."""
    keys = ["env/all/reward/total", "optim/kl_sample_train_v2", "optim/entropy", "optim/lr",
            "tokens/cumulative/sampled", "cost/cumulative_usd", "time/total",
            "test/env/all/reward/total", "gsm8k/test (v2)/env/all/ac_tokens_per_turn"]
    assert usual_keys(keys) == [
        ("reward", "env/all/reward/total"), ("KL", "optim/kl_sample_train_v2"),
        ("entropy", "optim/entropy"), ("learning rate", "optim/lr"),
        ("tokens", "tokens/cumulative/sampled"), ("cost", "cost/cumulative_usd"),
        ("time", "time/total")]


def test_an_evaluators_key_is_not_taken_for_a_usual_one() -> None:
    """Only an evaluator logs tokens: no tokens chart (its key is not the training one)."""
    assert usual_keys(["env/all/reward/total", "gsm8k/test (v2)/env/all/ac_tokens_per_turn",
                       "test/time/total"]) == [("reward", "env/all/reward/total")]


def test_a_chart_title_names_the_last_and_best_value() -> None:
    """The title line says the label, last and best; the y range labels the rows."""
    text = chart_text("reward", "env/all/reward/total", [(0, 0.0), (1, 1.0)], 1.0, 1.0, 60, 3)
    lines = text.plain.splitlines()
    assert lines[0].startswith("reward env/all/reward/total  last 1  best 1")
    assert lines[1].startswith("1│") and lines[3].startswith("0│")


def test_a_transcript_names_roles_and_tool_calls_and_folds_thinking() -> None:
    """Thinking is one folded line unless unfolded; a tool call is named with its arguments;
    an escape character from the model is shown, not sent to the terminal."""
    msgs = [{"role": "user", "content": "2+2?\x1b[31m"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm, four"},
                                               {"type": "text", "text": "Let me check."}],
             "tool_calls": [{"type": "function", "id": "c1",
                             "function": {"name": "calc", "arguments": '{"e": "2+2"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "calc", "content": "4"}]
    folded = transcript_text(msgs).plain
    assert "hmm, four" not in folded and "▸ thinking (9 chars" in folded
    assert '→ calc({"e": "2+2"})' in folded and "── tool calc [c1]" in folded
    assert "\x1b" not in folded and "\\x1b[31m" in folded
    assert "hmm, four" in transcript_text(msgs, thinking=True).plain
