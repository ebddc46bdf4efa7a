"""mkdocs hooks (mkdocs.yml ``hooks:``): the generated pages, made at build time from the code so that they
cannot drift: reference/params.md (the params schema), reference/cli.md (the ``poeval`` parser) and
images/rulegraph.svg (``snakemake --rulegraph`` of the main job, drawn by graphviz) on workflow.md."""

import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))   # this checkout's package, whatever the environment has installed

from poeval import docs  # noqa: E402

GENERATED = {
    "reference/params.md": docs.params_page,
    "reference/cli.md": docs.cli_page,
    "images/rulegraph.svg": lambda: docs.rulegraph_svg(ROOT),
}


def on_files(files, config):
    for uri, make in GENERATED.items():
        if files.get_file_from_path(uri) is not None:
            raise RuntimeError(f"docs/{uri} is generated at build time: remove the file")
        files.append(File.generated(config, uri, content=make()))
    return files


def on_nav(nav, config, files):
    # the home page sits in the "Getting started" section, so mkdocs finds no top-level homepage and the theme's
    # site-name link becomes "." (a folder listing when the site is opened from disk): name index.md the homepage
    if nav.homepage is None:
        nav.homepage = next((p for p in nav.pages if p.file.src_uri == "index.md"), None)
    return nav


def on_page_markdown(markdown, page, config, files):
    return docs.fill_markers(markdown, ROOT)
