# Recipes "PPT (.pptx)", "Word (.docx)" and "Excel (.xlsx)" of the document-generation skill,
# with a matplotlib chart added to the deck as the skill suggests.
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from bs4 import BeautifulSoup
from pptx import Presentation
from pptx.util import Inches, Pt
from pptx.dml.color import RGBColor

plt.figure(figsize=(4, 3)); plt.bar(["North", "South"], [120, 95]); plt.title("Revenue")
plt.savefig("/workspace/outputs/chart.png", dpi=80); plt.close()

slides_html = ["<h1>Quarterly report</h1><p>Revenue grew in every region</p>",
               "<h2>Highlights</h2><ul><li>North: 120</li><li>South: 95</li></ul>",
               '<h2>Chart</h2><img src="/workspace/outputs/chart.png">']
prs = Presentation(); prs.slide_width, prs.slide_height = Inches(13.33), Inches(7.5)
for html in slides_html:
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    tf = slide.shapes.add_textbox(Inches(0.8), Inches(0.6), Inches(11.7), Inches(6)).text_frame
    tf.word_wrap = True
    for el in BeautifulSoup(html, "html.parser").find_all(["h1", "h2", "p", "li", "img"]):
        if el.name == "img" and el.get("src"):
            slide.shapes.add_picture(el["src"], Inches(1), Inches(2.2), width=Inches(8)); continue
        p = tf.add_paragraph() if tf.paragraphs[0].runs else tf.paragraphs[0]
        r = p.add_run(); r.text = ("• " if el.name == "li" else "") + el.get_text()
        r.font.name = "Noto Sans CJK SC"; r.font.bold = el.name in ("h1", "h2")
        r.font.size = Pt({"h1": 40, "h2": 28}.get(el.name, 18))
        r.font.color.rgb = RGBColor.from_string("0f172a" if r.font.bold else "1f2937")
prs.save("/workspace/outputs/deck.pptx")

from docx import Document
from docx.shared import Pt as DocxPt
doc = Document()
doc.styles["Normal"].font.name = "Noto Sans CJK SC"
doc.styles["Normal"].font.size = DocxPt(11)
doc.add_heading("Quarterly report", 0)
doc.add_paragraph("Revenue grew in every region this quarter.")
table = doc.add_table(rows=1, cols=2)
table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Region", "Revenue"
for region, revenue in [("North", "120"), ("South", "95")]:
    cells = table.add_row().cells
    cells[0].text, cells[1].text = region, revenue
doc.save("/workspace/outputs/report.docx")

import xlsxwriter
wb = xlsxwriter.Workbook("/workspace/outputs/revenue.xlsx")
ws = wb.add_worksheet("Revenue")
ws.write_row(0, 0, ["Region", "Revenue"])
ws.write_row(1, 0, ["North", 120]); ws.write_row(2, 0, ["South", 95])
ws.write_formula(3, 1, "=SUM(B2:B3)", None, 215)
ws.freeze_panes(1, 0)
chart = wb.add_chart({"type": "column"})
chart.add_series({"categories": "=Revenue!$A$2:$A$3", "values": "=Revenue!$B$2:$B$3"})
ws.insert_chart("D2", chart)
wb.close()
print("office files written")
