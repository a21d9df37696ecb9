# The skill's self-check: reopen each file structurally (size, page/slide count, text present).
import os
from pypdf import PdfReader
from pptx import Presentation
from docx import Document
from openpyxl import load_workbook

out = "/workspace/outputs"
for name in ["report.pdf", "deck.pptx", "report.docx", "revenue.xlsx"]:
    assert os.path.getsize(f"{out}/{name}") > 0, name
pdf = PdfReader(f"{out}/report.pdf")
page1 = pdf.pages[0].extract_text()
# CJK glyphs too: with the Noto Sans CJK fonts the heading is real text, not tofu boxes.
assert len(pdf.pages) >= 1 and "Quarterly report" in page1 and "季度总结" in page1, page1
deck = Presentation(f"{out}/deck.pptx")
texts = [sh.text_frame.text for s in deck.slides for sh in s.shapes if sh.has_text_frame]
assert len(deck.slides) == 3 and "Quarterly report" in texts[0] and "• North: 120" in texts[1], texts
doc = Document(f"{out}/report.docx")
assert any(p.text == "Quarterly report" for p in doc.paragraphs)
assert doc.tables[0].cell(1, 0).text == "North"
sheet = load_workbook(f"{out}/revenue.xlsx")["Revenue"]
assert sheet["A2"].value == "North" and sheet["B3"].value == 95 and sheet["B4"].value == "=SUM(B2:B3)"
print(f"SELF-CHECK OK: pdf pages={len(pdf.pages)}, slides={len(deck.slides)}, docx paragraphs={len(doc.paragraphs)}, xlsx rows={sheet.max_row}")
