"""The SVG plots: well-formed, one marker per finite data point, the Eq. 6 line where b̂ puts it."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from scoring.plots import Line, Series, nice_ticks, rescaling_svg, scatter_svg, scores_by_rank_svg

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def series_points(root: ET.Element) -> dict[str, list[tuple[float, float]]]:
    return {
        group.get("data-label"): [
            (float(c.get("cx")), float(c.get("cy"))) for c in group.iter(f"{SVG}circle")
        ]
        for group in root.iter(f"{SVG}g")
        if group.get("class") == "series"
    }


def axis_mapping(root: ET.Element, axis: str):
    """pixel → data along one axis, from two of the ticks the plot drew (ticks carry their value)."""
    ticks = [g for g in root.iter(f"{SVG}g") if g.get("class") == f"tick tick-{axis}"]
    first, last = ticks[0], ticks[-1]
    coordinate = "x1" if axis == "x" else "y1"
    p0, v0 = float(first.find(f"{SVG}line").get(coordinate)), float(first.get("data-value"))
    p1, v1 = float(last.find(f"{SVG}line").get(coordinate)), float(last.get("data-value"))
    return lambda pixel: v0 + (pixel - p0) * (v1 - v0) / (p1 - p0)


def texts(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{SVG}text")]


# --- ticks -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.0, 1.0, (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])),
        (1.0, 990.0, (0.0, 1000.0, [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0])),
        (1.0, 15.0, (0.0, 15.0, [0.0, 5.0, 10.0, 15.0])),
        (-0.13, 1.0, (-0.2, 1.0, [-0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0])),
        (0.5, 0.5, (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])),
    ],
)
def test_ticks_are_round_and_cover_the_range(low, high, expected):
    assert nice_ticks(low, high) == expected


# --- the generic scatter ---------------------------------------------------------------------------


def test_a_scatter_is_valid_svg_with_one_marker_per_finite_point():
    svg = scatter_svg(
        title="t",
        x_label="x",
        y_label="y",
        series=[
            Series(label="first", x=[0.1, 0.2, 0.3], y=[0.5, 0.6, 0.7], color="#000000"),
            Series(label="second", x=[0.4, np.nan, 0.9], y=[0.1, 0.2, np.inf], color="#ff0000"),
        ],
    )
    points = series_points(parse(svg))
    assert {label: len(p) for label, p in points.items()} == {"first": 3, "second": 1}


def test_points_land_where_their_values_say(tmp_path):
    root = parse(
        scatter_svg(
            title="t",
            x_label="x",
            y_label="y",
            series=[Series(label="s", x=[0.25, 0.8], y=[0.1, 0.9], color="#000")],
        )
    )
    to_x, to_y = axis_mapping(root, "x"), axis_mapping(root, "y")
    assert [(round(to_x(px), 3), round(to_y(py), 3)) for px, py in series_points(root)["s"]] == [
        (0.25, 0.1),
        (0.8, 0.9),
    ]


def test_every_text_is_escaped():
    nasty = '<script>alert("x")</script> & ȳ'
    svg = scatter_svg(
        title=nasty,
        x_label=nasty,
        y_label=nasty,
        series=[Series(label=nasty, x=[0.5], y=[0.5], color="#000")],
        lines=[Line(label=nasty, x1=0, y1=0, x2=1, y2=1)],
    )
    assert "<script>" not in svg
    root = parse(svg)
    assert root.find(f"{SVG}title").text == nasty
    assert texts(root).count(nasty) == 5  # title, two axis labels, two legend entries
    assert list(series_points(root)) == [nasty]


def test_a_scatter_without_data_says_so():
    root = parse(scatter_svg(title="t", x_label="x", y_label="y", series=[Series("s", [], [], "#000")]))
    assert "no data yet" in texts(root)
    assert series_points(root) == {"s": []}


def test_series_with_unequal_lengths_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        scatter_svg(title="t", x_label="x", y_label="y", series=[Series("s", [1, 2], [1], "#000")])


# --- Figure 2 --------------------------------------------------------------------------------------


@pytest.mark.parametrize("slope", [0.4782608695652174, 0.1873, 1.0, 1.35])
def test_the_rescaling_line_runs_from_0_1_minus_b_to_1_1(slope):
    x = [1.0, 0.75, 0.75, 0.5, 0.5, 0.5, 0.0, 0.0]
    previous = [1.0, 1.0, 1.0, 0.75, 0.75, 0.75, 0.5, 0.5]
    root = parse(rescaling_svg(ballot_number=2, win_ratio=x, previous_score=previous, rescale_slope=slope))
    (line,) = [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "fit"]
    to_x, to_y = axis_mapping(root, "x"), axis_mapping(root, "y")
    start = (to_x(float(line.get("x1"))), to_y(float(line.get("y1"))))
    end = (to_x(float(line.get("x2"))), to_y(float(line.get("y2"))))
    assert start == pytest.approx((0.0, 1.0 - slope), abs=0.005)
    assert end == pytest.approx((1.0, 1.0), abs=0.005)
    assert f"y = 1 − b̂ + b̂·x, b̂ = {slope:.4f}" in texts(root)


def test_the_rescaling_plot_has_one_marker_per_item_with_both_scores():
    x = [1.0, 0.75, np.nan, 0.25]
    previous = [1.0, 0.9, 0.8, 0.7]
    root = parse(rescaling_svg(ballot_number=3, win_ratio=x, previous_score=previous, rescale_slope=0.5))
    points = series_points(root)
    assert list(points) == ["items of ballot 3 (3)"]
    assert len(points["items of ballot 3 (3)"]) == 3
    assert root.find(f"{SVG}title").text == "Ballot 3: x(3) against ȳ(2)"


def test_a_rescaling_plot_without_a_slope_draws_no_line():
    root = parse(rescaling_svg(ballot_number=2, win_ratio=[0.5], previous_score=[0.5], rescale_slope=None))
    assert [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "fit"] == []


# --- Figure 4 --------------------------------------------------------------------------------------


def test_scores_by_rank_draws_one_series_per_ballot_and_the_final_score():
    nan = math.nan
    rank = [1, 2, 3, 4, 5, 6]
    win_ratio = [
        [1.0, 1.0, 0.9],
        [0.9, 0.7, 0.4],
        [0.8, 0.6, nan],
        [0.6, 0.3, nan],
        [0.4, nan, nan],
        [0.1, nan, nan],
    ]
    score = [0.97, 0.8, 0.75, 0.55, 0.4, 0.1]
    root = parse(scores_by_rank_svg(rank=rank, win_ratio=win_ratio, ballot_numbers=(1, 2, 3), score=score))
    points = series_points(root)
    assert {label: len(p) for label, p in points.items()} == {
        "x(1), ballot 1 (6 items)": 6,
        "x(2), ballot 2 (4 items)": 4,
        "x(3), ballot 3 (2 items)": 2,
        "final ȳ": 6,
    }
    to_x, to_y = axis_mapping(root, "x"), axis_mapping(root, "y")
    assert [(round(to_x(px), 3), round(to_y(py), 3)) for px, py in points["final ȳ"]] == list(
        zip(rank, score, strict=True)
    )
    assert "rank in the final ranking (1 = most related)" in texts(root)


def test_scores_by_rank_of_a_running_study_says_so():
    root = parse(
        scores_by_rank_svg(
            rank=[1, 2], win_ratio=[[0.5], [0.5]], ballot_numbers=(1,), score=[0.5, 0.5], final=False
        )
    )
    assert "ȳ so far" in series_points(root)
    assert "rank in the current ranking (1 = most related)" in texts(root)
