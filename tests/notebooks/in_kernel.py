"""Runs a Python file as a Jupyter kernel runs a cell: standard input is an empty pipe (its
writing end closed), and every program the cell starts with subprocess inherits it.

Usage: in_kernel.py CELL.py
"""
import os
import sys

read_end, write_end = os.pipe()
os.close(write_end)
os.dup2(read_end, 0)
os.close(read_end)
assert os.read(0, 1) == b""  # empty, at its end: what the kernel's children see

with open(sys.argv[1], encoding="utf-8") as cell:
    code = cell.read()
exec(compile(code, sys.argv[1], "exec"))
