"""The HTML shell of the two pages the server renders itself: /docs and the /ui inspector.

Both are served under a Content-Security-Policy that allows scripts from this origin only, so
a page brings only markup and links to its own files; nothing is escaped here, and nothing
read from a request may be passed in.
"""

from __future__ import annotations


def html_page(title: str, *, head: str, body: str) -> str:
    """A whole page: `head` (its stylesheets, icon and scripts) and `body`, verbatim but for
    their surrounding newlines, so either can be written as a triple-quoted block."""
    head, body = head.strip("\n"), body.strip("\n")
    return f"""\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{head}
</head>
<body>
{body}
</body>
</html>
"""
