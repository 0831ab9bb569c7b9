#!/usr/bin/env python3
"""Builds the JSON Schemas trainc validates its Kubernetes objects against (compiler/emit/verify_objects.cpp).

usage: k8s_schemas.py OUT.json KINDS.txt SWAGGER.json.gz CRD.yaml.gz...

KINDS.txt lists the objects trainc emits, one `apiVersion kind` a line. SWAGGER is the Kubernetes
OpenAPI v2 spec of the target version; each CRD file holds CustomResourceDefinitions (YAML, read by
the small block-YAML reader below: the build uses python's standard library only).

The output keeps only the definitions those kinds reach, in the strictness `kubectl apply` has
against an API server (fieldValidation=Strict):
  * every object schema with `properties` and no `additionalProperties` rejects unknown fields,
    except where a CRD preserves unknown fields;
  * IntOrString is an integer or a string; Quantity a number or a string of the resource.Quantity
    grammar; int32 is range-checked; byte is base64; date-time and duration are checked by pattern;
  * CRD x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
    x-kubernetes-embedded-resource and nullable are mapped to JSON Schema; a required field with a
    default (or described as defaulted by a webhook) is not required, since the API server defaults
    it before validating; a custom resource's metadata is checked as ObjectMeta.
Objects are validated with null values dropped, as the API server's decoder does (the C++ side).
The output is JSON lines: {"kubernetes", "kinds"} (each kind with its definition and the closure of
definitions it refers to), then one {"name": schema} a line, so that trainc parses only the
definitions of the kinds it meets. Large subschemas that occur more than once (the Pod templates
inlined in several CRDs) are stored once as definitions and referenced, so they are parsed once.
"""
import gzip
import hashlib
import json
import re
import sys

QUANTITY = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
RFC3339 = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
DURATION = (r"^([-+]?((([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+|0)"
            r"|\s*[0-9]+\s*(ns|nano|nanos|nanosecond|nanoseconds|us|micro|micros|microsecond|microseconds|ms|milli|"
            r"millis|millisecond|milliseconds|s|sec|secs|second|seconds|m|min|mins|minute|minutes|h|hour|hours|d|"
            r"day|days)?\s*)$")
BASE64 = r"^[A-Za-z0-9+/\s]*=?=?\s*$"
FORMAT_PATTERNS = {"byte": BASE64, "date-time": RFC3339, "datetime": RFC3339, "date": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
                   "duration": DURATION}
INT32 = {"minimum": -2147483648, "maximum": 2147483647}
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": ["integer", "string"]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": QUANTITY}]},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {},
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {},
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": {},
}
DEFAULTED = re.compile(r"\b(is|are) defaulted\b", re.I)


# ------------------------------------------------------------------ block YAML (the subset CRD files use)
class YamlError(Exception):
    pass


def plain_value(s):
    """YAML 1.2 core schema resolution of a plain scalar."""
    if s in ("", "~", "null", "Null", "NULL"):
        return None
    if s in ("true", "True", "TRUE"):
        return True
    if s in ("false", "False", "FALSE"):
        return False
    if re.fullmatch(r"[-+]?[0-9]+", s):
        return int(s)
    if re.fullmatch(r"0x[0-9a-fA-F]+", s):
        return int(s, 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", s):
        return float(s)
    if s == "{}":
        return {}
    if s == "[]":
        return []
    if s[0] in "{[&*!|>%@`":
        raise YamlError(f"unsupported YAML construct: {s[:40]}")
    return s


ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0", "r": "\r", " ": " ", "b": "\b", "e": "\x1b",
           "a": "\a", "f": "\f", "v": "\v", "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}


def fold(lines):
    """Flow scalar line folding: a line break is a space, an empty line a newline."""
    out = ""
    for i, ln in enumerate(lines):
        if i == 0:
            out = ln
        elif ln == "":
            out += "\n"
        elif out.endswith("\n") or out == "":
            out += ln
        else:
            out += " " + ln
    return out


class Reader:
    def __init__(self, text):
        self.lines = text.split("\n")
        self.i = 0

    @staticmethod
    def indent(line):
        return len(line) - len(line.lstrip(" "))

    def significant(self):
        """Index of the next line that is neither blank nor a comment, or None."""
        while self.i < len(self.lines):
            s = self.lines[self.i].strip()
            if s and not s.startswith("#"):
                return self.i
            self.i += 1
        return None

    def node(self, min_indent):
        j = self.significant()
        if j is None or self.indent(self.lines[j]) < min_indent:
            return None
        line = self.lines[j]
        n = self.indent(line)
        if line[n:] == "-" or line[n:].startswith("- "):
            return self.sequence(n)
        return self.mapping(n)

    def sequence(self, n):
        out = []
        while True:
            j = self.significant()
            if j is None:
                return out
            line = self.lines[j]
            if self.indent(line) != n or not (line[n:] == "-" or line[n:].startswith("- ")):
                return out
            rest = line[n + 1:]
            if rest.strip() == "":
                self.i += 1
                out.append(self.node(n + 1))
                continue
            # "- key: value" or "- scalar": re-read the item as if the dash were a space
            k = n + 1 + (len(rest) - len(rest.lstrip(" ")))
            self.lines[j] = " " * k + line[k:]
            out.append(self.item(k))

    def item(self, k):
        line = self.lines[self.i]
        body = line[k:]
        if body.startswith("- ") or body == "-":
            return self.sequence(k)
        if self.split_key(body) is not None:
            return self.mapping(k)
        return self.scalar(body, k - 1)

    @staticmethod
    def split_key(body):
        """(key, rest) when `body` starts a mapping entry, else None."""
        if body[0] in "'\"":
            q = body[0]
            end = body.find(q, 1)
            while q == "'" and end != -1 and body[end + 1:end + 2] == "'":
                end = body.find(q, end + 2)
            if end == -1 or not (body[end + 1:].startswith(": ") or body[end + 1:] == ":"):
                return None
            key = body[1:end].replace("''", "'") if q == "'" else json.loads(body[:end + 1])
            return key, body[end + 2:].strip()
        m = re.match(r"([^:#{}\[\],]+?):( |$)", body)
        if not m:
            return None
        return m.group(1), body[m.end():].strip()

    def mapping(self, n):
        out = {}
        while True:
            j = self.significant()
            if j is None:
                return out
            line = self.lines[j]
            if self.indent(line) != n or line[n:].startswith("- ") or line[n:] == "-":
                if self.indent(line) > n:
                    raise YamlError(f"line {j + 1}: unexpected indentation")
                return out
            kv = self.split_key(line[n:])
            if kv is None:
                raise YamlError(f"line {j + 1}: expected 'key: value'")
            key, rest = kv
            if key in out:
                raise YamlError(f"line {j + 1}: duplicate key {key}")
            if rest == "" or rest.startswith("#"):
                self.i += 1
                nxt = self.significant()
                if nxt is not None and self.indent(self.lines[nxt]) == n and (
                        self.lines[nxt][n:].startswith("- ") or self.lines[nxt][n:] == "-"):
                    out[key] = self.sequence(n)
                else:
                    out[key] = self.node(n + 1)
            else:
                out[key] = self.scalar(rest, n)
        return out

    def scalar(self, text, n):
        """A scalar starting with `text` on the current line; continuation lines are indented more than n."""
        start = self.i
        self.i += 1
        if text[0] in "|>":
            return self.block(text, n)
        if text[0] in "'\"":
            q = text[0]
            buf = text
            while not self.closed(buf, q):
                if self.i >= len(self.lines):
                    raise YamlError(f"line {start + 1}: unterminated quoted scalar")
                buf += "\n" + self.lines[self.i]
                self.i += 1
            end = self.closing(buf, q)
            tail = buf[end + 1:].strip()
            if tail and not tail.startswith("#"):
                raise YamlError(f"line {start + 1}: text after a quoted scalar")
            inner = buf[1:end]
            parts = [p.strip(" \t") for p in inner.split("\n")]
            if q == "'":
                return fold(parts).replace("''", "'")
            return self.unescape(inner)
        lines = [re.sub(r"\s+#.*$", "", text).rstrip()]
        while True:
            j = self.i
            if j >= len(self.lines):
                break
            s = self.lines[j]
            if s.strip() == "":
                lines.append("")
                self.i += 1
                continue
            if self.indent(s) <= n or s.strip().startswith("#"):
                break
            lines.append(s.strip())
            self.i += 1
        while lines and lines[-1] == "":
            lines.pop()
            self.i -= 1
        if len(lines) == 1:
            return plain_value(lines[0])
        return fold(lines)

    @staticmethod
    def closing(buf, q):
        i = 1
        while i < len(buf):
            c = buf[i]
            if q == '"' and c == "\\":
                i += 2
                continue
            if c == q:
                if q == "'" and buf[i + 1:i + 2] == "'":
                    i += 2
                    continue
                return i
            i += 1
        return -1

    def closed(self, buf, q):
        return self.closing(buf, q) != -1

    @staticmethod
    def unescape(inner):
        # fold lines first (an escaped line break joins without a space), then resolve escapes
        lines = inner.split("\n")
        out = ""
        for idx, ln in enumerate(lines):
            seg = ln if idx == 0 else ln.lstrip(" \t")
            if idx < len(lines) - 1:
                seg = seg.rstrip(" \t")
            if idx == 0:
                out = seg
            elif seg == "":
                out += "\n"
            elif out.endswith("\\"):
                out = out[:-1] + seg
            elif out.endswith("\n"):
                out += seg
            else:
                out += " " + seg
        res, i = [], 0
        while i < len(out):
            c = out[i]
            if c != "\\":
                res.append(c)
                i += 1
                continue
            e = out[i + 1]
            if e in ESCAPES:
                res.append(ESCAPES[e])
                i += 2
            elif e in "xuU":
                w = {"x": 2, "u": 4, "U": 8}[e]
                res.append(chr(int(out[i + 2:i + 2 + w], 16)))
                i += 2 + w
            else:
                raise YamlError(f"unknown escape \\{e}")
        return "".join(res)

    def block(self, header, n):
        m = re.fullmatch(r"([|>])([1-9]?)([-+]?)([1-9]?)\s*(#.*)?", header)
        if not m:
            raise YamlError(f"bad block scalar header {header}")
        style, chomp = m.group(1), m.group(3)
        explicit = m.group(2) or m.group(4)
        body = []
        indent = n + int(explicit) if explicit else None
        while self.i < len(self.lines):
            s = self.lines[self.i]
            if s.strip() == "":
                body.append("")
                self.i += 1
                continue
            if indent is None:
                indent = self.indent(s)
                if indent <= n:
                    break
            if self.indent(s) < indent:
                break
            body.append(s[indent:])
            self.i += 1
        trailing = 0
        while body and body[-1] == "":
            body.pop()
            trailing += 1
        self.i -= 0
        if style == "|":
            text = "\n".join(body)
        else:
            text = ""
            for k, ln in enumerate(body):
                if k == 0:
                    text = ln
                elif ln == "" or ln.startswith(" ") or body[k - 1].startswith(" ") or body[k - 1] == "":
                    text += "\n" + ln
                else:
                    text += " " + ln
        if not body:
            return ""
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" * (1 + trailing)
        return text + "\n"


def load_all(text):
    docs, cur = [], []
    for line in text.split("\n"):
        if re.fullmatch(r"---\s*(#.*)?", line) or line.strip() == "...":
            docs.append("\n".join(cur))
            cur = []
        else:
            cur.append(line)
    docs.append("\n".join(cur))
    out = []
    for d in docs:
        r = Reader(d)
        v = r.node(0)
        if r.significant() is not None:
            raise YamlError(f"line {r.i + 1}: unexpected text")
        if v is not None:
            out.append(v)
    return out


# ------------------------------------------------------------------ Kubernetes built-in types (swagger v2)
def format_rules(fmt):
    if fmt == "int32":
        return dict(INT32)
    if fmt in FORMAT_PATTERNS:
        return {"pattern": FORMAT_PATTERNS[fmt]}
    return {}


def conv_swagger(s):
    if not isinstance(s, dict):
        return s
    if "$ref" in s:
        return {"$ref": "#/definitions/" + s["$ref"].split("/")[-1]}
    o = {}
    if "type" in s:
        o["type"] = s["type"]
    if s.get("format") and s["format"] != "int-or-string":
        o.update(format_rules(s["format"]))
    if "enum" in s:
        o["enum"] = s["enum"]
    if "items" in s:
        o["items"] = conv_swagger(s["items"])
    if s.get("required"):
        o["required"] = s["required"]
    if "properties" in s:
        o["properties"] = {k: conv_swagger(v) for k, v in s["properties"].items()}
    if "additionalProperties" in s:
        a = s["additionalProperties"]
        o["additionalProperties"] = conv_swagger(a) if isinstance(a, dict) else a
    elif "properties" in s:
        o["additionalProperties"] = False
    if "allOf" in s:
        o["allOf"] = [conv_swagger(x) for x in s["allOf"]]
    return o


# ------------------------------------------------------------------ CRDs (openAPIV3Schema)

def case_insensitive(pattern):
    """Go's (RE2) inline flag (?i), which ECMAScript regular expressions (the validator's) lack: the
    flag is dropped and each lower-case range in a bracket gains its upper-case twin. Kueue's CRDs
    use it only before ranges such as [a-z] (AdmissionCheck parameters.kind)."""
    out = pattern.replace("(?i)", "")
    if re.search(r"[A-Za-z]", re.sub(r"\[[^\]]*\]", "", out)):
        sys.exit(f"k8s_schemas: cannot make {pattern!r} case-insensitive: a letter outside a bracket")
    return out.replace("a-z", "a-zA-Z")

def conv_crd(s, in_junctor=False):
    if isinstance(s, bool):
        return s
    if not isinstance(s, dict):
        return {}
    o = {}
    int_or_string = s.get("x-kubernetes-int-or-string") is True
    preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
    if int_or_string:
        o["type"] = ["integer", "string"] + (["null"] if s.get("nullable") else [])
    elif "type" in s:
        o["type"] = [s["type"], "null"] if s.get("nullable") else s["type"]
    for k in ("enum", "pattern", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties",
              "maxProperties", "multipleOf"):
        if k in s:
            o[k] = s[k]
    if "pattern" in o and "(?i)" in o["pattern"]:
        o["pattern"] = case_insensitive(o["pattern"])
    if s.get("format"):
        for k, v in format_rules(s["format"]).items():
            o.setdefault(k, v)
    if s.get("required"):
        props = s.get("properties") or {}
        req = [r for r in s["required"]
               if not (r in props and ("default" in props[r] or DEFAULTED.search(props[r].get("description") or "")))]
        if req:
            o["required"] = req
    if "minimum" in s:
        o["exclusiveMinimum" if s.get("exclusiveMinimum") is True else "minimum"] = s["minimum"]
    if "maximum" in s:
        o["exclusiveMaximum" if s.get("exclusiveMaximum") is True else "maximum"] = s["maximum"]
    if "items" in s:
        o["items"] = conv_crd(s["items"], in_junctor)
    props = dict(s["properties"]) if "properties" in s else None
    if s.get("x-kubernetes-embedded-resource") is True:
        props = props or {}
        for k in ("apiVersion", "kind"):
            props.setdefault(k, {"type": "string"})
        props.setdefault("metadata", {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    if props is not None:
        o["properties"] = {k: conv_crd(v, in_junctor) for k, v in props.items()}
    if "additionalProperties" in s:
        a = s["additionalProperties"]
        o["additionalProperties"] = conv_crd(a, in_junctor) if isinstance(a, dict) else a
    elif props is not None and not preserve and not in_junctor:
        o["additionalProperties"] = False
    for j in ("allOf", "anyOf", "oneOf"):
        if j in s and not (int_or_string and j == "anyOf"):
            branches = [conv_crd(x, True) for x in s[j]]
            if j in o:
                o.setdefault("allOf", []).append({j: branches})
            else:
                o[j] = branches
    if "not" in s:
        o["not"] = conv_crd(s["not"], True)
    return o


# ------------------------------------------------------------------ reachability and sharing
def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str):
            out.add(r.split("/")[-1])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def reachable(defs, roots):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        found = set()
        refs(defs[name], found)
        todo.extend(found - seen)
    return seen


def subschemas(node):
    """The (container, key) of every schema directly inside the schema `node`."""
    if not isinstance(node, dict):
        return
    for k in ("items", "additionalProperties", "not"):
        if isinstance(node.get(k), dict):
            yield node, k
    for name in (node.get("properties") or {}):
        yield node["properties"], name
    for j in ("allOf", "anyOf", "oneOf"):
        for i in range(len(node.get(j) or [])):
            yield node[j], i


def share(defs, min_size=2000):
    """Moves schemas of at least min_size bytes that occur more than once into definitions."""
    counts = {}

    def key(node):
        return json.dumps(node, sort_keys=True, separators=(",", ":"))

    def count(node):
        for parent, k in subschemas(node):
            child = parent[k]
            text = key(child)
            if len(text) >= min_size:
                counts[text] = counts.get(text, 0) + 1
            count(child)

    for d in defs.values():
        count(d)
    shared = {}

    def rewrite(node):
        """A copy of the schema `node` with its repeated subschemas replaced by references."""
        if not isinstance(node, dict):
            return node
        out = dict(node)
        for k in ("properties",):
            if isinstance(out.get(k), dict):
                out[k] = dict(out[k])
        for j in ("allOf", "anyOf", "oneOf"):
            if isinstance(out.get(j), list):
                out[j] = list(out[j])
        for parent, k in list(subschemas(out)):
            child = parent[k]
            text = key(child)
            if counts.get(text, 0) > 1:
                name = "shared." + hashlib.sha1(text.encode()).hexdigest()[:12]
                if name not in shared:
                    shared[name] = None
                    shared[name] = rewrite(child)
                parent[k] = {"$ref": "#/definitions/" + name}
            else:
                parent[k] = rewrite(child)
        return out

    out = {name: rewrite(d) for name, d in defs.items()}
    out.update(shared)
    return out


def main():
    out_path, kinds_path, swagger_path, crd_paths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    version = re.search(r"swagger-([0-9.]+)\.json", swagger_path).group(1)
    wanted = []
    with open(kinds_path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                api, kind = line.split()
                wanted.append((api, kind))
    with gzip.open(swagger_path, "rt", encoding="utf-8") as f:
        swagger = json.load(f)
    k8s_defs, gvk = {}, {}
    for name, s in swagger["definitions"].items():
        k8s_defs[name] = SPECIAL[name] if name in SPECIAL else conv_swagger(s)
        for g in s.get("x-kubernetes-group-version-kind", []):
            api = f"{g['group']}/{g['version']}" if g["group"] else g["version"]
            gvk.setdefault((api, g["kind"]), name)
    crds = {}
    for p in crd_paths:
        with gzip.open(p, "rt", encoding="utf-8") as f:
            docs = load_all(f.read())
        source = p.replace("\\", "/").split("/")[-1][:-len(".gz")]
        for crd in docs:
            if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            for v in spec.get("versions", []):
                raw = (v.get("schema") or {}).get("openAPIV3Schema")
                if raw is None:
                    continue
                sch = conv_crd(raw)
                sch.setdefault("properties", {})
                sch["properties"]["apiVersion"] = {"type": "string"}
                sch["properties"]["kind"] = {"type": "string"}
                sch["properties"]["metadata"] = {"$ref": "#/definitions/" + OBJECT_META}
                crds[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = (sch, source, v.get("served", True))
    kinds, defs, roots = {}, {}, []
    for api, kind in wanted:
        if (api, kind) in gvk:
            name = gvk[(api, kind)]
            kinds[f"{api} {kind}"] = {"definition": name, "source": f"Kubernetes {version} OpenAPI ({name})"}
            roots.append(name)
        elif (api, kind) in crds:
            sch, source, served = crds[(api, kind)]
            if not served:
                sys.exit(f"k8s_schemas.py: {api} {kind} is not served by {source}")
            name = f"crd.{api.replace('/', '.')}.{kind}"
            defs[name] = sch
            kinds[f"{api} {kind}"] = {"definition": name, "source": f"CRD {source}"}
            roots.append(OBJECT_META)
        else:
            sys.exit(f"k8s_schemas.py: no schema for {api} {kind} in Kubernetes {version} or the CRD files")
    for name in reachable(k8s_defs, roots):
        defs[name] = k8s_defs[name]
    defs = share(defs)
    for k in kinds.values():
        k["closure"] = sorted(reachable(defs, [k["definition"]]))
    # JSON lines: the kinds, then one definition a line, so that trainc parses only what it uses.
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"kubernetes": version, "kinds": kinds}, f, separators=(",", ":"))
        f.write("\n")
        for name, d in sorted(defs.items()):
            assert '"' not in name and "\\" not in name
            json.dump({name: d}, f, separators=(",", ":"))
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
