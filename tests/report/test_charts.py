"""The static SVG line chart of markdown reports."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rlsim.report.charts import line_chart_svg, nice_top


@pytest.mark.parametrize(("value", "top"), [(0.106, 0.12), (8, 8), (1, 1), (0.0277, 0.03),
                                            (123, 160), (0.5, 0.5)])
def test_axis_tops_are_round(value: float, top: float) -> None:
    assert nice_top(value) == pytest.approx(top)


def test_the_chart_is_valid_svg_with_a_line_and_a_marker_per_point() -> None:
    svg = line_chart_svg([("a <b>", [(0, 1.0), (2, 0.5), (4, 0.2)]), ("c", [(0, 0.9)])],
                         "x", "y")
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f"{ns}polyline")) == 2
    assert len(root.findall(f"{ns}circle")) == 4
    assert "a &lt;b&gt;" in svg  # labels are escaped
