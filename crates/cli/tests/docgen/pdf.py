# Recipe "PDF (preferred)" of the document-generation skill: semantic HTML + WeasyPrint.
from weasyprint import HTML, CSS
html = """<h1>Quarterly report</h1>
<p>Revenue grew in every region this quarter.</p>
<h2>By region</h2>
<table><tr><th>Region</th><th>Revenue</th></tr>
<tr><td>North</td><td>120</td></tr><tr><td>South</td><td>95</td></tr></table>
<h2>季度总结</h2><p>收入增长。</p>"""
HTML(string=html).write_pdf("/workspace/outputs/report.pdf", stylesheets=[CSS(string="""
@page { size: A4; margin: 25mm; }
body { font-family: 'Noto Sans CJK SC','DejaVu Sans'; font-size: 11pt; line-height: 1.55; color: #1f2937; }
h1 { font-size: 22pt; } h2 { font-size: 15pt; margin: 18pt 0 6pt; } h1, h2 { color: #0f172a; font-weight: 600; }
table { width: 100%; border-collapse: collapse; }
th, td { border: 1px solid #e2e8f0; padding: 6pt 8pt; text-align: left; } th { background: #f1f5f9; font-weight: 600; }
""")])
print("pdf written")
