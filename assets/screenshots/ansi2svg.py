#!/usr/bin/env python3
"""A terminal screen as an SVG picture.

Reads what `tmux capture-pane -e -p` prints (text with the SGR escapes of its colours and
attributes) on standard input and writes an SVG of that screen, one cell per character on a
fixed grid, on standard output:

    tmux capture-pane -e -p -t NAME | ansi2svg.py --cols 120 --rows 40 > screen.svg
"""

import argparse
import re
import sys
from html import escape

# The 16 colours of the terminal (xterm's), then the 256-colour cube and the grey ramp.
BASE = [
    "#000000", "#cd0000", "#00cd00", "#cdcd00", "#3b78ff", "#cd00cd", "#00cdcd", "#e5e5e5",
    "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff",
]
FG, BG = "#d0d0d0", "#1c1c1c"


def colour256(n):
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


class Style:
    def __init__(self):
        self.reset()

    def reset(self):
        self.fg = None
        self.bg = None
        self.bold = False
        self.dim = False
        self.italic = False
        self.underline = False
        self.reverse = False

    def key(self):
        return (self.fg, self.bg, self.bold, self.dim, self.italic, self.underline, self.reverse)

    def apply(self, params):
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.reset()
            elif c == 1:
                self.bold = True
            elif c == 2:
                self.dim = True
            elif c == 3:
                self.italic = True
            elif c == 4:
                self.underline = True
            elif c == 7:
                self.reverse = True
            elif c == 22:
                self.bold = self.dim = False
            elif c == 23:
                self.italic = False
            elif c == 24:
                self.underline = False
            elif c == 27:
                self.reverse = False
            elif 30 <= c <= 37:
                self.fg = BASE[c - 30]
            elif 90 <= c <= 97:
                self.fg = BASE[c - 90 + 8]
            elif 40 <= c <= 47:
                self.bg = BASE[c - 40]
            elif 100 <= c <= 107:
                self.bg = BASE[c - 100 + 8]
            elif c == 39:
                self.fg = None
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(codes):
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    value = colour256(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    value = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                    i += 4
                else:
                    value = None
                if c == 38:
                    self.fg = value
                else:
                    self.bg = value
            i += 1


SGR = re.compile(r"\x1b\[([0-9;]*)m")
OTHER = re.compile(r"\x1b\[[0-9;?]*[A-Za-ln-z]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def cells(line, style):
    """The characters of one screen line, each with its style."""
    out = []
    pos = 0
    line = OTHER.sub("", line)
    for m in SGR.finditer(line):
        for ch in line[pos:m.start()]:
            out.append((ch, style.key()))
        style.apply(m.group(1))
        pos = m.end()
    for ch in line[pos:]:
        out.append((ch, style.key()))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cols", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--font-size", type=float, default=14.0)
    args = ap.parse_args()

    cw = args.font_size * 0.6
    ch = args.font_size * 1.25
    pad = 10
    width = args.cols * cw + 2 * pad
    height = args.rows * ch + 2 * pad

    style = Style()
    lines = sys.stdin.read().split("\n")[: args.rows]
    svg = [
        '<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.1f %.1f">'
        % (width, height, width, height),
        '<rect width="100%%" height="100%%" rx="6" fill="%s"/>' % BG,
        '<g font-family="DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace" '
        'font-size="%.1f" xml:space="preserve" style="white-space: pre">' % args.font_size,
    ]
    for row, line in enumerate(lines):
        chars = cells(line, style)[: args.cols]
        y = pad + row * ch
        # Runs of one style.
        runs = []
        for col, (c, key) in enumerate(chars):
            if runs and runs[-1][2] == key:
                runs[-1][1] += c
            else:
                runs.append([col, c, key])
        for col, text, key in runs:
            fg, bg, bold, dim, italic, underline, reverse = key
            fg, bg = fg or FG, bg
            if reverse:
                fg, bg = (bg or BG), fg
            x = pad + col * cw
            n = len(text)
            if bg:
                svg.append(
                    '<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>'
                    % (x, y, n * cw, ch, bg)
                )
            if not text.strip():
                continue
            attrs = ['x="%.1f"' % x, 'y="%.1f"' % (y + ch * 0.78), 'fill="%s"' % fg]
            attrs.append('textLength="%.1f" lengthAdjust="spacingAndGlyphs"' % (n * cw))
            if bold:
                attrs.append('font-weight="bold"')
            if dim:
                attrs.append('opacity="0.6"')
            if italic:
                attrs.append('font-style="italic"')
            if underline:
                attrs.append('text-decoration="underline"')
            # No-break spaces: a viewer collapses runs of plain ones, whatever the SVG asks.
            shown = escape(text, quote=False).replace(" ", "\u00a0")
            svg.append("<text %s>%s</text>" % (" ".join(attrs), shown))
    svg.append("</g></svg>")
    sys.stdout.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
