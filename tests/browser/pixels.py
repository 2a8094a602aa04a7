"""The colours of a page's screenshot at given points, decoded by Chromium itself (a canvas of a blank
page), so the tests need no imaging library."""

import base64

_DECODE = """async ([url, points]) => {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement("canvas");
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    return points.map(([x, y]) => Array.from(context.getImageData(x, y, 1, 1).data));
}"""


def inner_corners(page, selector: str, inset: int = 8) -> list[tuple[int, int]]:
    """Four points ``inset`` px inside the corners of the element: its background, clear of its text."""
    box = page.locator(selector).bounding_box()
    left, top = int(box["x"]) + inset, int(box["y"]) + inset
    right, bottom = int(box["x"] + box["width"]) - inset, int(box["y"] + box["height"]) - inset
    return [(left, top), (right, top), (left, bottom), (right, bottom)]


def colours_at(decoder, screenshot: bytes, points) -> list[tuple[int, int, int, int]]:
    """The RGBA colour of ``screenshot`` (PNG bytes) at each (x, y) of ``points``; ``decoder`` is any
    blank page of the browser (a page of a device scale factor of 1 takes its points in CSS pixels)."""
    url = "data:image/png;base64," + base64.b64encode(screenshot).decode()
    return [tuple(colour) for colour in decoder.evaluate(_DECODE, [url, [list(point) for point in points]])]
