"""Raw HTML through an allow-list sanitizer (``nh3``, the Rust ``ammonia`` library).

``LogTree.html(raw)`` and every markup string a rendered tree carries pass through
``sanitize_html``: only ammonia's default formatting tags survive (no ``meta``, ``base``,
``form``, ``iframe``, ``object``, ``embed``, ``script``, ``style``, ``link``), with their default
attributes plus ``class`` and ``title``; no event handler, no ``style`` attribute, no ``id`` (the
page's own anchors stay unambiguous). URLs keep the ``http``, ``https`` and ``mailto`` schemes on
links; an image source survives only as a base64 ``data:image/<raster>`` URI, so no request can
leave the page even where the Content-Security-Policy would be ignored.
"""

from __future__ import annotations

import copy
from typing import Final

import nh3

from rlio.logtree.conversation import is_safe_image_uri

_TAGS: Final = frozenset(nh3.ALLOWED_TAGS)
_ATTRIBUTES: Final = {tag: set(a) for tag, a in copy.deepcopy(nh3.ALLOWED_ATTRIBUTES).items()}
_ATTRIBUTES["*"] = {"class", "title", "lang", "dir"}
_ATTRIBUTES["details"] = {"open"}
_URL_SCHEMES: Final = {"http", "https", "mailto", "data"}
_LINK_ATTRS: Final = frozenset({"href", "cite"})


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    """Keep ``data:`` only as a safe image source; an image loads nothing but a data URI."""
    if tag == "img" and attr == "src":
        return value if is_safe_image_uri(value) else None
    if attr in _LINK_ATTRS and value.strip().lower().startswith("data:"):
        return None
    return value


_CLEANER: Final = nh3.Cleaner(
    tags=set(_TAGS),
    clean_content_tags={"script", "style"},
    attributes=_ATTRIBUTES,
    url_schemes=_URL_SCHEMES,
    attribute_filter=_attribute_filter,
    strip_comments=True,
    link_rel="noopener noreferrer",
)


def sanitize_html(raw: str) -> str:
    """``raw`` with everything outside the allow-list removed (text content kept, escaped)."""
    if "<" not in raw and "&" not in raw and ">" not in raw:
        return raw
    return _CLEANER.clean(raw)


def sanitize_fragment(markup: str) -> str:
    """Like ``sanitize_html`` but free for plain text: a string without ``<`` holds no markup.

    Used on the string children of a tree being rendered (text or raw markup, docs/format.md §7).
    """
    return markup if "<" not in markup else _CLEANER.clean(markup)
