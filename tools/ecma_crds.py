#!/usr/bin/env python3
"""Prints a gzipped CRD file (schemas/crds/*.yaml.gz) with each pattern that uses Go's (RE2) inline
flag (?i) spelled out for ECMAScript regular expressions, as tools/k8s_schemas.py does when it
builds trainc's own schemas (case_insensitive): for validators written in JavaScript, whose RegExp
refuses (?i). Usage: ecma_crds.py FILE.yaml.gz > FILE.yaml"""
import gzip
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k8s_schemas import case_insensitive  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
        text = f.read()
    # pattern: <scalar> lines of the YAML, quoted or not, as controller-gen writes them.
    def fix(m):
        quote, body = m.group(2), m.group(3)
        return f"{m.group(1)}{quote}{case_insensitive(body)}{quote}"
    sys.stdout.write(re.sub(r"^(\s*pattern: )(['\"]?)(.*\(\?i\).*?)\2$", fix, text, flags=re.M))


if __name__ == "__main__":
    main()
