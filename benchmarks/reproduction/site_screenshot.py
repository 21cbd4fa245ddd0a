"""The screenshot of the results page README shows (benchmarks/site.png): the top of
benchmarks/site/index.html in headless Chromium, at a laptop's window width.

    python benchmarks/reproduction/site_screenshot.py  # after python \
        benchmarks/reproduction/reproduce.py --site-only

Needs `chromium` (Debian: apt-get install chromium).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--page", default=str(HERE.parent / "site" / "index.html"))
    parser.add_argument("--out", default=str(HERE.parent / "site.png"))
    parser.add_argument("--size", default="1280,1000", help="window width,height in pixels")
    args = parser.parse_args()
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    if browser is None:
        raise SystemExit("needs chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory(prefix="oodfs-chromium-") as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={profile}",
                f"--window-size={args.size}",
                f"--screenshot={Path(args.out).resolve()}",
                Path(args.page).resolve().as_uri(),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
