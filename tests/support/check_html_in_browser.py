#!/usr/bin/python3
"""Opens an HTML report in headless Chromium and checks that it really renders.

  check_html_in_browser.py PAGE.html [--charts N | --min-charts N] [--timeout S] [--chromium PATH]

Fails (exit 1, with a message) unless:
  * the DOM Chromium dumps after running the page's scripts carries the page's marker
    (data-rendered="ok" on <body>) and no data-script-errors attribute (the page's window.onerror
    records errors there);
  * the DOM holds the expected number of <svg> charts (--charts: exactly, --min-charts: at least);
  * a 1280x2000 screenshot was written and is not blank (decoded here with zlib and struct: the
    pixels are not all one colour).
Standard library only, so that /usr/bin/python3 runs it anywhere Chromium is installed.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


class CheckFailed(Exception):
    pass


def find_chromium(explicit):
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    raise CheckFailed("chromium not found (install the Debian package chromium: scripts/install-deps.sh)")


def run_chromium(chromium, page_url, extra, timeout):
    # A fresh profile per run: no state from another run, no lock on a shared profile.
    with tempfile.TemporaryDirectory(prefix="vigil-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
               "--user-data-dir=" + profile] + extra + [page_url]
        try:
            done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckFailed("chromium did not finish within %s s: %s" % (timeout, " ".join(cmd)))
        except OSError as e:
            raise CheckFailed("cannot run %s: %s" % (chromium, e))
    if done.returncode != 0:
        raise CheckFailed("chromium exited with %d: %s" % (done.returncode, done.stderr.decode(errors="replace")[-2000:]))
    return done.stdout.decode("utf-8", errors="replace")


def png_pixels(path):
    """(width, height, channels, rows): the PNG's unfiltered scanlines (8-bit grey, RGB, grey+alpha or RGBA)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise CheckFailed("%s is not a PNG" % path)
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None or not idat:
        raise CheckFailed("%s has no image data" % path)
    width, height, depth, colour, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace != 0:
        raise CheckFailed("%s: unsupported PNG (bit depth %d, colour type %d, interlace %d)" % (path, depth, colour, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise CheckFailed("%s: image data has %d bytes, expected %d" % (path, len(raw), height * (stride + 1)))
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:  # Sub
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:  # Up
            line = bytearray((a + b) & 0xFF for a, b in zip(line, previous))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        elif kind != 0:
            raise CheckFailed("%s: bad PNG filter %d in row %d" % (path, kind, y))
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def check_not_blank(path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise CheckFailed("chromium wrote no screenshot at %s" % path)
    width, height, channels, rows = png_pixels(path)
    first = rows[0][:channels]
    # The first pixel repeated over a row is what a blank row looks like.
    blank_row = first * width
    if all(row == blank_row for row in rows):
        raise CheckFailed("the screenshot (%dx%d) is blank: every pixel is %s" % (width, height, tuple(first)))
    return width, height


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("page", help="the HTML file")
    count = parser.add_mutually_exclusive_group()
    count.add_argument("--charts", type=int, help="the exact number of <svg> charts expected")
    count.add_argument("--min-charts", type=int, default=1, help="the least number of <svg> charts expected (default 1)")
    parser.add_argument("--timeout", type=float, default=90, help="seconds for each chromium run (default 90)")
    parser.add_argument("--chromium", help="the browser to run (default: chromium on PATH)")
    parser.add_argument("--screenshot", help="where to keep the screenshot (default: a temporary file)")
    args = parser.parse_args()

    try:
        if not os.path.isfile(args.page):
            raise CheckFailed("no such file: %s" % args.page)
        chromium = find_chromium(args.chromium)
        url = "file://" + os.path.abspath(args.page)

        # The DOM after the scripts ran; the budget lets the load finish before the dump.
        dom = run_chromium(chromium, url, ["--virtual-time-budget=5000", "--dump-dom"], args.timeout)
        body = re.search(r"<body\b[^>]*>", dom, re.IGNORECASE)
        if body is None:
            raise CheckFailed("the dumped DOM has no <body> (%d bytes dumped)" % len(dom))
        errors = re.search(r"\bdata-script-errors=\"([^\"]*)\"", dom)
        if errors:
            raise CheckFailed("the page recorded script errors: %s" % errors.group(1))
        if not re.search(r"\bdata-rendered=\"ok\"", body.group(0)):
            raise CheckFailed("the page's script did not run to its end: no data-rendered=\"ok\" on <body>: %s" % body.group(0))
        charts = len(re.findall(r"<svg\b", dom, re.IGNORECASE))
        if args.charts is not None and charts != args.charts:
            raise CheckFailed("the page has %d <svg> charts, expected %d" % (charts, args.charts))
        if args.charts is None and charts < args.min_charts:
            raise CheckFailed("the page has %d <svg> charts, expected at least %d" % (charts, args.min_charts))

        with tempfile.TemporaryDirectory(prefix="vigil-shot-") as tmp:
            shot = os.path.abspath(args.screenshot) if args.screenshot else os.path.join(tmp, "page.png")
            if os.path.exists(shot):
                os.remove(shot)  # an old screenshot must not pass for a new one
            run_chromium(chromium, url, ["--virtual-time-budget=5000", "--screenshot=" + shot, "--window-size=1280,2000"],
                         args.timeout)
            width, height = check_not_blank(shot)
    except CheckFailed as e:
        print("check_html_in_browser: FAILED: %s" % e, file=sys.stderr)
        return 1
    print("check_html_in_browser: ok: %s rendered, %d charts, screenshot %dx%d not blank" % (args.page, charts, width, height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
