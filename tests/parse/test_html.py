"""The HTML reader: main content only, structure as blocks, nothing of markup left."""

from __future__ import annotations

import pytest

from poolq.worker.parse.formats.html import read_html
from poolq.worker.parse.formats.html_boilerplate import is_boilerplate_token
from poolq.worker.parse.limits import ParseLimits
from poolq.worker.parse.readers import read_document
from tests.parse.made_files import BOILERPLATE_TEXTS, html_page, leftover_markup

LIMITS = ParseLimits()
ARTICLE = """
<header><h1>Tides &amp; Currents</h1><p class="byline">By A. Writer</p></header>
<p>The <em>moon</em> pulls the <a href="/sea">sea</a> &mdash; twice a day.</p>
<div class="intro">Text that sits directly in a div.<p>A nested paragraph.</p>Tail text.</div>
<h2>Spring tides</h2>
<ul><li>Full moon</li><li>New moon<ul><li>Nested item</li></ul></li></ul>
<pre><code>tide(t) = a * cos(w * t)
    + b</code></pre>
<table class="data"><caption>Heights</caption>
  <tr><th>Port</th><th>Height</th></tr><tr><td>Brest</td><td>7.2 m</td></tr></table>
<h3>Neap tides</h3>
<blockquote>Quoted<br>over two lines</blockquote>
<figure><img src="t.png" alt="chart"><figcaption>Figure 1: tide chart</figcaption></figure>
<h2>Further</h2><dl><dt>Ebb</dt><dd>The falling tide.</dd></dl>
<div class="table-header-cell">Cell text stays</div><div class="entry-header">Entry header stays</div>
"""


def _doc(body: str = ARTICLE, **kw):
    return read_html(html_page(body, title="Tides & Currents", **kw), LIMITS)


def test_boilerplate_is_gone_and_no_markup_is_left():
    texts = [b.text for b in _doc().blocks]
    joined = "\n".join(texts)
    for text in BOILERPLATE_TEXTS:
        assert text not in joined
    assert "Enable JavaScript" not in joined and "track" not in joined
    assert leftover_markup(texts) == []
    assert "&amp;" not in joined and "&mdash;" not in joined
    assert "Tides & Currents" in texts and "The moon pulls the sea — twice a day." in texts


def test_blocks_kinds_and_heading_paths():
    got = [(b.kind, b.headings, b.text) for b in _doc().blocks]
    top = ("Tides & Currents",)
    spring = (*top, "Spring tides")
    assert got == [
        ("heading", top, "Tides & Currents"),
        ("paragraph", top, "By A. Writer"),
        ("paragraph", top, "The moon pulls the sea — twice a day."),
        ("paragraph", top, "Text that sits directly in a div."),
        ("paragraph", top, "A nested paragraph."),
        ("paragraph", top, "Tail text."),
        ("heading", spring, "Spring tides"),
        ("list", spring, "Full moon"),
        ("list", spring, "New moon"),
        ("list", spring, "Nested item"),
        ("code", spring, "tide(t) = a * cos(w * t)\n    + b"),
        ("caption", spring, "Heights"),
        ("table", spring, "Port | Height"),
        ("table", spring, "Brest | 7.2 m"),
        ("heading", (*spring, "Neap tides"), "Neap tides"),
        ("paragraph", (*spring, "Neap tides"), "Quoted\nover two lines"),
        ("caption", (*spring, "Neap tides"), "Figure 1: tide chart"),
        ("heading", (*top, "Further"), "Further"),
        ("paragraph", (*top, "Further"), "Ebb"),
        ("paragraph", (*top, "Further"), "The falling tide."),
        ("paragraph", (*top, "Further"), "Cell text stays"),
        ("paragraph", (*top, "Further"), "Entry header stays"),
    ]


def test_the_title_loses_the_site_name_only_when_sure():
    assert _doc().title == "Tides & Currents"  # "... | Example Site", og:site_name says so
    page = b"<title>News | Tides explained</title><h1>Something else</h1><p>x</p>"
    assert read_html(page, LIMITS).title == "News | Tides explained"
    page = b"<title>Tides explained - Blog</title><h1>Tides explained</h1><p>x</p>"
    assert read_html(page, LIMITS).title == "Tides explained"
    assert read_html(b"<h1>Only a heading</h1><p>x</p>", LIMITS).title == "Only a heading"
    icon = b"<body><svg><title>Search icon</title></svg><h1>The heading</h1></body>"
    assert read_html(icon, LIMITS).title == "The heading"
    page = b"""<title>Storm warning | Coast News</title>
      <meta property="og:site_name" content="Coast News"><h1>Storms ahead</h1>"""
    assert read_html(page, LIMITS).title == "Storm warning"


def test_the_encoding_is_honoured():
    assert _doc("<p>Привет, мир</p>", encoding="windows-1251").blocks[-1].text == "Привет, мир"
    latin = "<p>café crème brûlée</p>".encode("cp1252")  # no declaration, not UTF-8
    assert read_html(latin, LIMITS).blocks[0].text == "café crème brûlée"
    utf16 = "<html><body><p>naïve</p></body></html>".encode("utf-16")
    assert read_html(utf16, LIMITS).blocks[0].text == "naïve"


def test_content_outside_main_is_ignored_and_a_lone_article_is_the_content():
    page = b"<body><div>Site chrome</div><article><p>The story.</p></article></body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["The story."]
    page = b"<body><div role='main'><p>Main text.</p></div><div>Other</div></body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Main text."]


def test_the_element_read_is_never_removed_for_its_own_name():
    page = b"<body class='has-sidebar'><nav>Menu links</nav><p>Body text.</p></body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Body text."]


def test_a_page_that_is_all_boilerplate_is_still_read():
    page = b"<body class='has-sidebar'><div class='menu'>Only this text is here.</div></body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Only this text is here."]


def test_hidden_elements_and_layout_tables_and_forms_around_the_content():
    page = b"""<body><div hidden>secret</div><p style="display: none">gone</p>
      <p aria-hidden="true">icon</p><span class="sr-only">(opens a tab)</span>
      <table><tr><td><h2>Layout</h2><p>Read as text.</p></td></tr></table></body>"""
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Layout", "Read as text."]
    page = b"<body><form id='aspnetForm'><h1>Page</h1><p>All of it.</p></form></body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Page", "All of it."]


def test_xhtml_goes_through_the_same_reader():
    xhtml = b"""<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>X</title></head>
<body><p>One<br/>two</p><div/><p>three</p></body></html>"""
    doc = read_document(xhtml, "page.xhtml")
    assert doc.mime == "application/xhtml+xml"
    assert [b.text for b in doc.blocks] == ["One\ntwo", "three"]


def test_html_named_pdf_is_read_as_html():
    doc = read_document(html_page("<p>Really a web page.</p>"), "download.pdf")
    assert doc.mime == "text/html"
    assert [b.text for b in doc.blocks] == ["Really a web page."]


@pytest.mark.parametrize(
    ("token", "boilerplate"),
    [
        ("nav", True),
        ("navBar", True),
        ("site-header", True),
        ("global_footer", True),
        ("cookie-consent", True),
        ("sidebar-left", True),
        ("share-buttons", True),
        ("next-post", True),
        ("sr-only", True),
        ("header", True),
        ("table-header-cell", False),
        ("card-header", False),
        ("entry-header", False),
        ("page-header", False),
        ("next-steps", False),
        ("shadow", False),
        ("navigator", False),
        ("download", False),
        ("headers", False),
    ],
)
def test_class_tokens_match_whole_words(token: str, boilerplate: bool):
    assert is_boilerplate_token(token) is boilerplate


def test_deep_nesting_is_read_without_recursion():
    page = b"<body>" + b"<div>" * 5000 + b"<p>Deep text.</p>" + b"</div>" * 5000 + b"</body>"
    assert [b.text for b in read_html(page, LIMITS).blocks] == ["Deep text."]
