"""Sphinx configuration: the docs site, built from Markdown (myst-parser).

    sphinx-build -W --keep-going -b html docs docs/_build/html

Each program's reference page is generated from the parser the program runs
(sphinx-argparse reads `t2t_lite.bin.<program>.build_parser`), so a renamed or
new flag changes the docs with no hand edit.
"""

project = "t2t-lite"
author = "the t2t-lite authors"
extensions = ["myst_parser", "sphinxarg.ext"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 3  # "[text](page.md#a-heading)" links to headings up to ###
myst_enable_extensions = ["colon_fence"]
html_theme = "alabaster"
html_title = "t2t-lite"
# The site is read offline too: no external fonts, no analytics.
html_theme_options = {"font_family": "sans-serif", "head_font_family": "sans-serif",
                      "fixed_sidebar": True}
suppress_warnings = []
