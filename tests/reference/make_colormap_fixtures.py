#!/usr/bin/python3
"""Writes tests/fixtures/colormaps.json: matplotlib's viridis and magma tables sampled at 33 evenly spaced
points, the reference the app's polynomial fits (app/gui/render/colormap.cpp, shaders/heatmap.frag.glsl) are
tested against (tests/gui/test_colormap.cpp).

Development time only (Debian's python3-matplotlib):  /usr/bin/python3 tests/reference/make_colormap_fixtures.py
"""
import json
import os

import matplotlib

OUT = os.path.join(os.path.dirname(__file__), "..", "fixtures", "colormaps.json")
SAMPLES = 33

maps = {}
for name in ("viridis", "magma"):
    table = matplotlib.colormaps[name].colors  # 256 RGB rows
    points = []
    for i in range(SAMPLES):
        index = round(i * 255 / (SAMPLES - 1))  # the table's rows sit at t = index / 255
        r, g, b = table[index]
        points.append({"t": index / 255, "rgb": [round(r, 6), round(g, 6), round(b, 6)]})
    maps[name] = points
with open(OUT, "w") as f:
    json.dump({"generator": "tests/reference/make_colormap_fixtures.py (matplotlib " + matplotlib.__version__ + ")",
               "maps": maps}, f, indent=1)
print("wrote", OUT)
