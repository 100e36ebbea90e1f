"""Reads tidy CSV files as a notebook would: one pandas.read_csv call each, no options.

Usage: read_tidy.py FILE=LINES... [--blocks=FILE]
Each FILE must load with the columns of the tidy layout, LINES rows, whole numbers for the
positions, floating-point values (NaN exactly where masked is true) and booleans for masked.
--blocks=FILE: a CSV in the block layout, which pandas is expected to refuse; prints the
error's name.
"""
import sys

import pandas as pd

COLUMNS = ["stage", "head", "row", "col", "row_token", "col_token", "value", "masked"]

tidy = 0
for argument in sys.argv[1:]:
    if argument.startswith("--blocks="):
        try:
            pd.read_csv(argument[len("--blocks="):])
            print("block layout: read")
        except Exception as error:  # pandas.errors.ParserError, by name below
            print("block layout:", type(error).__name__)
        continue
    path, lines = argument.rsplit("=", 1)
    frame = pd.read_csv(path)
    assert list(frame.columns) == COLUMNS, (path, list(frame.columns))
    assert len(frame) == int(lines), (path, len(frame), lines)
    assert frame["row"].dtype.kind == "i" and frame["col"].dtype.kind == "i", path
    assert frame["value"].dtype.kind == "f", (path, frame["value"].dtype)
    assert frame["masked"].dtype == bool, (path, frame["masked"].dtype)
    assert (frame["value"].isna() == frame["masked"]).all(), path
    heads = frame["head"].dropna()
    assert ((heads == heads.round()) & (heads >= 1)).all(), path
    # One number per (stage, head, row, col).
    assert not frame.duplicated(["stage", "head", "row", "col"]).any(), path
    tidy += 1
print(f"read {tidy} tidy files")
