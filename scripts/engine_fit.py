"""Fit the engines' overheads on the published runs, check them on each publisher held out, print the table.

    make -o .venv/.ready engine-fit          # fit again (minutes), write src/servingmath/data/engine_fit.json
    python scripts/engine_fit.py --show      # print the table from the kept results (no simulation)
"""
import argparse
import json
import sys
import time

from servingmath import calibration


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="print the kept results without fitting again")
    args = parser.parse_args(argv)
    if not args.show:
        start = time.time()
        data = calibration.compute(log=lambda line: print(f"{time.time() - start:6.0f} s  {line}", flush=True))
        calibration.FIT_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        calibration.results.cache_clear()
        print(f"wrote {calibration.FIT_FILE} in {time.time() - start:.0f} s")
    print(calibration.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
