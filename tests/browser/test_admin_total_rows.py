"""The "total" rows of the study page's plan and pools tables line up with the columns above them."""

import pytest

from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"

# For each table: the cells of its header, of its last body row and of its total row, with the box of
# each cell's text (empty cells have none). Numbers are right-aligned in their cells, labels left-aligned.
MEASURE = """(table) => {
  const box = (cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rect = range.getBoundingClientRect();
    return cell.textContent.trim() ? {left: rect.left, right: rect.right, top: rect.top} : null;
  };
  const rows = table.tBodies[0].rows;
  return {
    header: table.tHead.rows[0].cells.length,
    above: [...rows[rows.length - 1].cells].map(box),
    total: [...table.tFoot.rows[0].cells].map(box),
  };
}"""


def test_the_total_rows_line_up_with_the_columns_above(page, live_server, django_user_model):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(tokens=5, areas=2, start=False)  # two areas of 10 items each
    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.goto(f"{live_server.url}/admin/collection/study/{study.pk}/change/")

    for table in (page.locator("#plan-ballots"), page.locator("#pools table")):
        cells = table.evaluate(MEASURE)
        assert len(cells["total"]) == len(cells["above"]) == cells["header"]
        label, *numbers = zip(cells["above"], cells["total"], strict=True)
        assert round(label[1]["left"], 1) == round(label[0]["left"], 1)  # "total" under the row labels
        for above, total in numbers:
            if total is not None:  # each total's digits end where the digits above end
                assert round(total["right"], 1) == round(above["right"], 1)
        tops = {round(box["top"], 1) for box in cells["total"] if box is not None}
        assert len(tops) == 1, f"the total row's texts start at different heights: {sorted(tops)}"
