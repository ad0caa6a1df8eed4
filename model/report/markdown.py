"""A small Markdown-to-HTML converter for the documentation site: enough for the project's own
pages (headings, paragraphs, lists, fenced code, tables, block quotes, inline code, emphasis,
links, images). Written here so `make docs` needs no package beyond the standard library."""
from __future__ import annotations

import re
from html import escape

_INLINE = re.compile(r"(`+)(.+?)\1|!\[([^\]]*)\]\(([^)\s]+)\)|\[([^\]]+)\]\(([^)\s]+)\)"
                     r"|\*\*(.+?)\*\*|(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"
                     r"|(?<!\w)_(?!\s)(.+?)(?<!\s)_(?!\w)|<(https?://[^>\s]+)>")


def _link(url: str, rewrite) -> str:
    return escape(rewrite(url) if rewrite else url, quote=True)


def inline(text: str, rewrite=None) -> str:
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(escape(text[pos:m.start()], quote=False))
        if m.group(1):
            out.append(f"<code>{escape(m.group(2).strip(), quote=False)}</code>")
        elif m.group(4) is not None:
            out.append(f'<img alt="{escape(m.group(3))}" src="{_link(m.group(4), rewrite)}">')
        elif m.group(6) is not None:
            out.append(f'<a href="{_link(m.group(6), rewrite)}">{inline(m.group(5), rewrite)}</a>')
        elif m.group(7) is not None:
            out.append(f"<strong>{inline(m.group(7), rewrite)}</strong>")
        elif m.group(8) is not None:
            out.append(f"<em>{inline(m.group(8), rewrite)}</em>")
        elif m.group(9) is not None:
            out.append(f"<em>{inline(m.group(9), rewrite)}</em>")
        else:
            out.append(f'<a href="{escape(m.group(10))}">{escape(m.group(10))}</a>')
        pos = m.end()
    out.append(escape(text[pos:], quote=False))
    return "".join(out)


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)]


def to_html(md: str, rewrite=None) -> str:
    """`rewrite(url)` maps link targets (e.g. `trace-format.md` -> `trace-format.html`)."""
    lines = md.splitlines()
    out: list[str] = []
    i = 0
    para: list[str] = []

    def flush():
        if para:
            out.append(f"<p>{inline(' '.join(para), rewrite)}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith("```") or s.startswith("~~~"):
            flush()
            fence = s[:3]
            lang = s[3:].strip()
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            cls = f' class="language-{escape(lang)}"' if lang else ""
            out.append(f"<pre><code{cls}>{escape(chr(10).join(body), quote=False)}</code></pre>")
            i += 1
            continue
        if not s:
            flush()
            i += 1
            continue
        m = re.match(r"(#{1,6})\s+(.*?)\s*#*$", s)
        if m:
            flush()
            level, text = len(m.group(1)), m.group(2)
            anchor = re.sub(r"[^\w\- ]", "", text.lower()).strip().replace(" ", "-")
            out.append(f'<h{level} id="{anchor}">{inline(text, rewrite)}</h{level}>')
            i += 1
            continue
        if s.startswith("|") and i + 1 < len(lines) and re.match(r"^\s*\|?\s*:?-{2,}", lines[i + 1]):
            flush()
            head = _cells(s)
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append("<table><tr>" + "".join(f"<th>{inline(c, rewrite)}</th>" for c in head)
                       + "</tr>" + "".join("<tr>" + "".join(f"<td>{inline(c, rewrite)}</td>"
                                                            for c in r) + "</tr>" for r in rows)
                       + "</table>")
            continue
        if s.startswith(">"):
            flush()
            quote = []
            while i < len(lines) and lines[i].strip().startswith(">"):
                quote.append(lines[i].strip()[1:].lstrip())
                i += 1
            out.append(f"<blockquote>{to_html(chr(10).join(quote), rewrite)}</blockquote>")
            continue
        m = re.match(r"^(\s*)([-*+]|\d+[.)])\s+(.*)", line)
        if m:
            flush()
            ordered = m.group(2)[0].isdigit()
            items: list[list[str]] = []
            while i < len(lines):
                m2 = re.match(r"^(\s*)([-*+]|\d+[.)])\s+(.*)", lines[i])
                if m2 and len(m2.group(1)) <= len(m.group(1)) + 1:
                    items.append([m2.group(3)])
                elif lines[i].startswith("  ") and lines[i].strip() and items:
                    items[-1].append(lines[i].strip())
                else:
                    break
                i += 1
            tag = "ol" if ordered else "ul"
            out.append(f"<{tag}>" + "".join(f"<li>{inline(' '.join(it), rewrite)}</li>"
                                             for it in items) + f"</{tag}>")
            continue
        if line.startswith("    ") and not para:
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            out.append(f"<pre><code>{escape(chr(10).join(body).rstrip(), quote=False)}</code></pre>")
            continue
        para.append(s)
        i += 1
    flush()
    return "\n".join(out)
