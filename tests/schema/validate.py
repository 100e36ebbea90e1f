"""Validates attntrace's JSON against the schemas of docs/schema (draft 2020-12).

Usage: validate.py MANIFEST
Each line of MANIFEST: SCHEMA<TAB>DOCUMENT<TAB>json|jsonl. A jsonl document is validated line
by line. Prints "valid: N documents" when all are, else one line per invalid document (its
path, where in it, what is wrong) and exits 1. Each schema is first checked against the
draft's own meta-schema.
"""
import json
import sys

import jsonschema

validators = {}
checked = 0
problems = []
with open(sys.argv[1], encoding="utf-8") as manifest:
    for line in manifest:
        schema_path, document_path, kind = line.rstrip("\n").split("\t")
        if schema_path not in validators:
            with open(schema_path, encoding="utf-8") as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            validators[schema_path] = jsonschema.Draft202012Validator(schema)
        validator = validators[schema_path]
        with open(document_path, encoding="utf-8") as f:
            text = f.read()
        documents = [json.loads(text)] if kind == "json" else [json.loads(l) for l in text.splitlines()]
        for number, document in enumerate(documents, 1):
            error = jsonschema.exceptions.best_match(validator.iter_errors(document))
            if error is not None:
                where = "/".join(str(p) for p in error.absolute_path)
                line_no = f" line {number}" if kind == "jsonl" else ""
                problems.append(f"{document_path}{line_no}: /{where}: {error.message[:300]}")
        checked += 1
for problem in problems:
    print(problem)
if problems:
    sys.exit(1)
print(f"valid: {checked} documents")
