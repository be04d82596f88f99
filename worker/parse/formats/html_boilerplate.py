"""What of an HTML page is not its content: the rules the HTML reader removes elements by.

Removed anywhere in the page (never text): ``script style noscript template svg iframe object
embed canvas``, ``[hidden]``, ``[aria-hidden=true]``, inline ``display:none`` or
``visibility:hidden``.

Removed around the content (:func:`strip_boilerplate`, on the element the reader reads):

- elements: ``nav``, ``aside``, ``form`` (unless it holds the content: ASP.NET pages wrap the
  whole body in one), ``dialog``, ``button``, ``header`` and ``footer`` unless inside
  ``main``/``article`` (there they hold the article's title or byline);
- landmark roles: ``navigation``, ``banner``, ``contentinfo``, ``complementary``, ``search``,
  ``menu``, ``menubar``, ``dialog``, ``alert``;
- ``a[rel=prev|next]`` links;
- by ``id``/``class``, matching whole words, never substrings. A token is split into words at
  ``-``, ``_`` and camelCase humps (``site-header`` -> site, header; ``navBar`` -> nav, bar). A
  token is boilerplate when one of its words is in :data:`WORDS` (nav, menu, sidebar, cookie,
  share, ...), or when it is exactly ``header``/``footer`` or those words after a site-wide
  word (``site-header``, ``global-footer``, ``masthead``): ``table-header-cell``,
  ``card-header``, ``entry-header`` stay (they hold content or a title). ``next`` counts only
  with ``post``/``page``/``link``/``article``/``prev`` (``next-steps`` is content), and
  accessibility-only text (``sr-only``, ``visually-hidden``, ``screen-reader-text``) goes too.

An element whose rules match is kept if it is or contains ``main``, ``article`` or
``[role=main]`` (a wrapper with a bad name must not take the content with it), and so is the
element the reader reads (``<body class="has-sidebar">``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from selectolax.lexbor import LexborHTMLParser, LexborNode


def word_set(words: str) -> frozenset[str]:
    """A set of the space-separated ``words``."""
    return frozenset(words.split())


NEVER_TEXT = "script, style, noscript, template, svg, iframe, object, embed, canvas, head"
HIDDEN = "[hidden], [aria-hidden=true], [aria-hidden=TRUE]"
_MAY_HIDE = '[style*="none" i], [style*="hidden" i]'  # then checked by _INVISIBLE_STYLE
_INVISIBLE_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)

AROUND = (
    "nav, aside, dialog, button, a[rel=prev], a[rel=next], "
    "[role=navigation], [role=banner], [role=contentinfo], [role=complementary], "
    "[role=search], [role=menu], [role=menubar], [role=dialog], [role=alert]"
)
CONTENT = "main, article, [role=main]"

WORDS = word_set(
    "nav navbar navigation navlinks menu menubar submenu sidebar sidenav breadcrumb breadcrumbs "
    "crumbs cookie cookies consent gdpr banner masthead pagination pager paging prev previous "
    "prevnext related share sharing sharebar social socials toc skip skiplink skiplinks advert "
    "adverts advertisement advertising ads ad adsense sponsor sponsored promo newsletter "
    "subscribe signup popup modal overlay tagcloud widget widgets"
)
_SITE = word_set("site global main top bottom page")
_NEXT_WITH = word_set("post posts page pages link links article prev previous")
_HIDDEN_TOKENS = word_set("sr-only visually-hidden screen-reader-text visuallyhidden")
_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[a-z0-9]+")


def words(token: str) -> list[str]:
    """``"siteHeader-nav_2"`` -> ``["site", "header", "nav", "2"]``."""
    return _WORD.findall(_HUMP.sub(" ", token).lower())


@lru_cache(maxsize=16384)
def is_boilerplate_token(token: str) -> bool:
    """Whether one ``class`` token (or an ``id``) names boilerplate (see the module)."""
    if token.lower() in _HIDDEN_TOKENS:
        return True
    parts = words(token)
    if not parts:
        return False
    if any(p in WORDS for p in parts):
        return True
    if "next" in parts and (len(parts) == 1 or any(p in _NEXT_WITH for p in parts)):
        return True
    last = parts[-1]
    if last in ("header", "footer"):
        return len(parts) == 1 or (len(parts) == 2 and parts[0] in _SITE and parts[0] != "page")
    return False


@lru_cache(maxsize=16384)
def _boilerplate_class(classes: str) -> bool:
    """Whether a ``class`` attribute's value names boilerplate (a page repeats a few values
    hundreds of times: each is judged once)."""
    return any(is_boilerplate_token(t) for t in classes.split())


def _named_boilerplate(node: LexborNode) -> bool:
    attrs = node.attributes
    ident = attrs.get("id")
    if ident and is_boilerplate_token(ident):
        return True
    classes = attrs.get("class")
    return bool(classes) and _boilerplate_class(classes)


def _holds_content(node: LexborNode) -> bool:
    return node.css_first(CONTENT) is not None


def strip_never_text(tree: LexborHTMLParser | LexborNode) -> None:
    """Elements that never hold readable text, and hidden ones, out of the tree."""
    for node in tree.css(NEVER_TEXT):
        node.decompose()
    for node in tree.css(HIDDEN):
        node.decompose()
    for node in tree.css(_MAY_HIDE):
        style = node.attributes.get("style") or ""
        if _INVISIBLE_STYLE.search(style):
            node.decompose()


def strip_boilerplate(root: LexborNode) -> None:
    """Navigation, banners, sidebars, cookie bars, share buttons and the like out of
    ``root``'s subtree (the module's rules); ``root`` itself stays."""
    top = root.mem_id

    def remove(nodes: list[LexborNode], *, headed_forms: bool = False) -> None:
        for node in nodes:
            if node.mem_id == top or _holds_content(node):
                continue
            if headed_forms and node.css_first("h1, h2") is not None:
                continue
            node.decompose()

    remove(root.css(AROUND))
    remove(root.css("form"), headed_forms=True)
    remove([n for n in root.css("header, footer") if not _inside_content(n, root)])
    remove([n for n in root.css("[id], [class]") if _named_boilerplate(n)])


def _inside_content(node: LexborNode, root: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in ("main", "article") or parent.attributes.get("role") == "main":
            return True
        if parent.mem_id == root.mem_id:
            return root.tag in ("main", "article") or root.attributes.get("role") == "main"
        parent = parent.parent
    return False
