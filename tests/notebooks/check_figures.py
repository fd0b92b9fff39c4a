"""Checks that a chapter's committed figures are the ones its notebook draws now.

The notebook test runs the notebook with OPTIMUS_FIGURES_DIR pointed into the build tree; this
script then compares every PNG it wrote with the PNG of the same name in the chapter's figures
folder, byte for byte. A figure that is missing on either side, or differs, fails with its name
and the command that redraws the committed figures.

usage: check_figures.py DRAWN_FOLDER COMMITTED_FOLDER NOTEBOOK
"""
import os
import sys

import matplotlib
import PIL


def pngs(folder):
    return {name for name in os.listdir(folder) if name.endswith(".png")} if os.path.isdir(folder) else set()


def main():
    drawn_dir, committed_dir, notebook = sys.argv[1:]
    drawn, committed = pngs(drawn_dir), pngs(committed_dir)
    problems = [f"{name}: in the chapter's figures folder, but the notebook does not draw it"
                for name in sorted(committed - drawn)]
    problems += [f"{name}: drawn by the notebook, but missing from the chapter's figures folder"
                 for name in sorted(drawn - committed)]
    for name in sorted(drawn & committed):
        with open(os.path.join(drawn_dir, name), "rb") as a, open(os.path.join(committed_dir, name), "rb") as b:
            if a.read() != b.read():
                problems.append(f"{name}: differs from what the notebook draws from the committed data")
    if not drawn:
        problems.append(f"the notebook wrote no figure into {drawn_dir}")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    chapter = os.path.relpath(committed_dir, root)          # chapters/NN-*/figures
    if not problems:
        print(f"{len(drawn)} figures of {chapter} equal what notebooks/{notebook}.ipynb draws: "
              + ", ".join(sorted(drawn)))
        return 0
    print(f"{chapter} is not what notebooks/{notebook}.ipynb draws now:")
    for p in problems:
        print(f"  {p}")
    print(f"Redraw the committed figures from the repository root, then review and commit them:\n"
          f"  OPTIMUS_FIGURES_DIR=$PWD/chapters /usr/bin/python3 -m nbconvert --to notebook --execute "
          f"--output-dir /tmp notebooks/{notebook}.ipynb\n"
          f"  git add -A {chapter}\n"
          f"(This run drew with matplotlib {matplotlib.__version__} and Pillow {PIL.__version__}; the committed "
          f"figures come from Debian 12's python3-matplotlib, which scripts/setup installs. Another version "
          f"can draw other bytes from the same data.)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
