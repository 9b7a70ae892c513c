#!/usr/bin/env python3
"""Checks that the documentation stays true to the tree (docs/testing.md).

  check_docs.py paths SOURCE_DIR
      Every repository path cited in README.md, CONTRIBUTING.md, docs/**/*.md
      and in the comments of the sources exists; every relative Markdown link
      (and its #anchor) resolves; every `docs/<page>.md §N` names a section of
      that page and every `docs/lldb.md F<n>` a fact of that page; and no
      comment or page cites the design notes that lived outside the repository
      (the rsp, design, formats, lldb and style notes of the shared docs folder).
  check_docs.py packets SOURCE_DIR
      Every route of gdbstub/src/session/packet_table.cc has a row in the
      "Packet routes" table of docs/protocol.md, every row is a route, and the
      file a row names declares or defines the route's handler.
  check_docs.py formats SOURCE_DIR
      Every format of core/src/formats/format_registry.cc (its reader's
      kFormatName) is named where `convert --to` is documented: docs/usage-cli.md
      and docs/formats/README.md (cli/main.cc prints the registry's own list).

Prints one line per problem (file:line: what) and exits 1 if there is any.
"""
import ast
import glob
import os
import re
import sys

ROOT_FILES = ("README.md", "CONTRIBUTING.md", "CMakeLists.txt", "setup.py", "pyproject.toml")
CODE_SUFFIXES = (".h", ".cc", ".c", ".proto", ".py", ".pyi", ".cmake", ".sh")
HASH_COMMENT_SUFFIXES = (".py", ".pyi", ".cmake", ".sh")
# Characters a cited path may contain; <name> and * are placeholders, {a,b} alternatives.
# A path after "repo:" (x64dbg:docs/...) is another project's and is not checked.
PATH_CHARS = r"[\w./*<>{},+-]"


def source_files(root):
    """Yields every file of the tree, relative to root, skipping build trees and hidden dirs."""
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel == "."
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and not (top and d.startswith("build")))
        if rel == "." and os.path.isdir(os.path.join(root, ".ci")):
            dirnames.append(".ci")
        for name in sorted(filenames):
            yield os.path.normpath(os.path.join(rel, name))


def is_markdown_doc(path):
    return path.endswith(".md") and (path in ROOT_FILES or path.startswith("docs" + os.sep))


def is_code(root, path):
    if path.endswith(CODE_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt":
        return True
    # Scripts without an extension (scripts/demo, .ci/run): a shebang.
    if path.startswith(("scripts" + os.sep, ".ci" + os.sep)):
        with open(os.path.join(root, path), "rb") as f:
            return f.read(2) == b"#!"
    return False


def comment_lines(path, text):
    """(line number, text) of the comments (and Python docstrings) of a source file."""
    lines = text.split("\n")
    hash_style = (path.endswith(HASH_COMMENT_SUFFIXES) or os.path.basename(path) == "CMakeLists.txt"
                  or "." not in os.path.basename(path))
    out = []
    if hash_style:
        for n, line in enumerate(lines, 1):
            i = line.find("#")
            if i >= 0:
                out.append((n, line[i:]))
        if path.endswith(".py"):
            try:
                tree = ast.parse(text)
            except SyntaxError:
                tree = None
            for node in ast.walk(tree) if tree else []:
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)):
                    body = node.body
                    if body and isinstance(body[0], ast.Expr) and isinstance(
                            getattr(body[0], "value", None), ast.Constant) and isinstance(
                                body[0].value.value, str):
                        start = body[0].lineno
                        for k, doc_line in enumerate(body[0].value.value.split("\n")):
                            out.append((start + k, doc_line))
        return out
    in_block = False
    for n, line in enumerate(lines, 1):
        if in_block:
            out.append((n, line))
            if "*/" in line:
                in_block = False
            continue
        i = line.find("//")
        j = line.find("/*")
        if i >= 0 and (j < 0 or i < j):
            out.append((n, line[i:]))
        elif j >= 0:
            out.append((n, line[j:]))
            in_block = "*/" not in line[j:]
    return out


def top_level_names(root):
    names = set()
    for name in os.listdir(root):
        if name.startswith("build") or (name.startswith(".") and name != ".ci"):
            continue
        names.add(name)
    return names


def expand(pattern):
    """{a,b} alternatives, then <placeholder> -> *."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m:
        out = []
        for alt in m.group(1).split(","):
            out += expand(pattern[:m.start()] + alt + pattern[m.end():])
        return out
    return [re.sub(r"<[^<>/]*>", "*", pattern)]


def path_exists(root, cited):
    for pattern in expand(cited):
        full = os.path.join(root, pattern)
        if "*" in pattern:
            if not glob.glob(full):
                return False
        elif not os.path.exists(full):
            return False
    return True


def github_anchor(heading):
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


class MarkdownPage:
    def __init__(self, text):
        self.anchors = set()
        self.numbers = set()
        in_fence = False
        for line in text.split("\n"):
            if line.startswith("```"):
                in_fence = not in_fence
            m = re.match(r"^#{1,6} (.*)", line)
            if m and not in_fence:
                self.anchors.add(github_anchor(m.group(1)))
                n = re.match(r"^(\d+(?:\.\d+)*)\.?\s", m.group(1))
                if n:
                    self.numbers.add(n.group(1))
        self.facts = set(re.findall(r"^\| (F\d+) \|", text, re.M))

    def has_section(self, number):
        if number in self.numbers:
            return True
        # §6.8 = item 8 of section 6's numbered list, when 6 has no numbered subsections.
        parent = number.rpartition(".")[0]
        return bool(parent) and parent in self.numbers and not any(
            n.startswith(parent + ".") for n in self.numbers)


def check_paths(root):
    problems = []
    tops = top_level_names(root)
    top_re = "|".join(re.escape(t) for t in sorted(tops, key=len, reverse=True))
    cited_re = re.compile(r"(?<![\w./<>*{}:-])(?:%s)(?:/%s*)?" % (top_re, PATH_CHARS))
    section_re = re.compile(r"(docs/[\w./-]+\.md)`?\s*(?:(?://|#|\*)\s*)?§\s*(\d+(?:\.\d+)*)")
    fact_re = re.compile(r"docs/lldb\.md`?\s+(F\d+)")
    link_re = re.compile(r"\]\(([^()\s]+)\)")
    # The design notes that lived outside the repository, cited without docs/.
    outside_re = re.compile(r"(?<![\w./-])(?:\.\./)?"
                            r"(?:shared/docs/\S*|(?:rsp|design|formats|lldb|style)\.md)")
    pages = {}

    def page(path):
        if path not in pages:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                pages[path] = MarkdownPage(f.read())
        return pages[path]

    for path in source_files(root):
        markdown = is_markdown_doc(path)
        if not markdown and not is_code(root, path):
            continue
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        if markdown:
            numbered = list(enumerate(text.split("\n"), 1))
        else:
            numbered = comment_lines(path, text)
        # Joined with the next line: a citation may wrap (`docs/protocol.md` / `// §6`).
        for k, (n, line) in enumerate(numbered):
            where = "%s:%d" % (path, n)
            for m in cited_re.finditer(line):
                cited = m.group(0).rstrip(".,:;")
                if "/" not in cited and cited not in ROOT_FILES:
                    continue  # a bare word such as "core" or "docs"
                if not path_exists(root, cited):
                    problems.append("%s: cites %s, which does not exist" % (where, cited))
            for m in outside_re.finditer(line):
                if line[max(m.start() - 1, 0):m.start()] == "[" or line[:m.start()].endswith("]("):
                    continue  # a Markdown link to a page of docs/ (checked below)
                problems.append("%s: cites %s, outside the repository (docs/ has it now: "
                                "docs/protocol.md, docs/architecture.md, docs/formats/, "
                                "docs/lldb.md, CONTRIBUTING.md)" % (where, m.group(0)))
            following = numbered[k + 1][1] if k + 1 < len(numbered) else ""
            joined = line + "\n" + following
            for m in section_re.finditer(joined):
                if m.start() >= len(line):
                    continue
                target, number = m.group(1), m.group(2)
                if (os.path.isfile(os.path.join(root, target))
                        and not page(target).has_section(number)):
                    problems.append("%s: cites %s §%s, a section that page does not have" %
                                    (where, target, number))
            for m in fact_re.finditer(line):
                if os.path.isfile(os.path.join(root, "docs/lldb.md")) and m.group(1) not in page(
                        "docs/lldb.md").facts:
                    problems.append("%s: cites docs/lldb.md %s, a fact that page does not list" %
                                    (where, m.group(1)))
            if not markdown:
                continue
            for m in link_re.finditer(line):
                link = m.group(1)
                if re.match(r"^[a-z]+:", link):
                    continue
                target, _, anchor = link.partition("#")
                if target:
                    target = os.path.normpath(os.path.join(os.path.dirname(path), target))
                else:
                    target = path
                if not os.path.exists(os.path.join(root, target)):
                    problems.append("%s: links to %s, which does not exist" % (where, link))
                elif anchor and target.endswith(".md") and anchor not in page(target).anchors:
                    problems.append("%s: links to %s, a heading %s does not have" %
                                    (where, link, target))
    return problems


def check_packets(root):
    problems = []
    table_path = "gdbstub/src/session/packet_table.cc"
    doc_path = "docs/protocol.md"
    with open(os.path.join(root, table_path), encoding="utf-8") as f:
        table = f.read()
    routes = {}
    for m in re.finditer(r'\{"((?:[^"\\]|\\.)*)",\s*k(?:Exact|Prefix),\s*C::\w+,\s*(\w+)', table):
        routes[m.group(1).encode().decode("unicode_escape")] = m.group(2)
    if not routes:
        return ["%s: no route found (has the table's shape changed?)" % table_path]
    if not os.path.isfile(os.path.join(root, doc_path)):
        return ["%s: missing (it must document every route of %s)" % (doc_path, table_path)]
    with open(os.path.join(root, doc_path), encoding="utf-8") as f:
        doc = f.read().split("\n")
    rows = {}
    in_section = False
    for n, line in enumerate(doc, 1):
        if line.startswith("## "):
            in_section = line.strip() == "## Packet routes"
            continue
        m = re.match(r"^\| `([^`]+)` \|.*\| `([^`]+)` \|\s*$", line)
        if in_section and m:
            rows[m.group(1)] = (n, m.group(2))
    if not rows:
        return ["%s: no \"## Packet routes\" table" % doc_path]
    for prefix, handler in routes.items():
        if prefix not in rows:
            problems.append("%s: the route `%s` (%s) has no row in the packet routes of %s" %
                            (table_path, prefix, handler, doc_path))
            continue
        n, handled_in = rows[prefix]
        files = [handled_in, re.sub(r"\.cc$", ".h", handled_in)]
        found = False
        for candidate in files:
            full = os.path.join(root, candidate)
            if os.path.isfile(full):
                with open(full, encoding="utf-8") as f:
                    found = found or re.search(r"\b%s\b" % re.escape(handler), f.read()) is not None
        if not found:
            problems.append("%s:%d: `%s` is handled by %s, which %s does not define" %
                            (doc_path, n, prefix, handler, handled_in))
    for prefix, (n, _) in rows.items():
        if prefix not in routes:
            problems.append("%s:%d: `%s` is not a route of %s" % (doc_path, n, prefix, table_path))
    return problems


def registry_format_names(root):
    """The kFormatName of each reader in the registry, in registry order."""
    with open(os.path.join(root, "core/src/formats/format_registry.cc"), encoding="utf-8") as f:
        readers = re.findall(r"FormatEntry<(\w+),", f.read())
    headers = ""
    for header in sorted(glob.glob(os.path.join(root, "core/src/formats/*/*.h"))):
        with open(header, encoding="utf-8") as f:
            headers += f.read()
    names = []
    for reader in readers:
        m = re.search(r"class %s\b[^;{]*\{.*?kFormatName = \"(\w+)\"" % reader, headers, re.S)
        names.append(m.group(1) if m else None)
    return readers, names


def check_formats(root):
    readers, names = registry_format_names(root)
    if not readers:
        return ["core/src/formats/format_registry.cc: no FormatEntry found"]
    problems = ["core/src/formats: no kFormatName for %s" % r
                for r, n in zip(readers, names) if not n]
    # (file, what marks the paragraph that lists the formats)
    # cli/main.cc prints the registry's list itself (FormatNames), so only the docs are checked.
    places = [("docs/usage-cli.md", "* **convert**"),
              ("docs/formats/README.md", "## The format registry")]
    for path, marker in places:
        if not os.path.isfile(os.path.join(root, path)):
            problems.append("%s: missing (it must list the formats of the registry)" % path)
            continue
        with open(os.path.join(root, path), encoding="utf-8") as f:
            text = f.read()
        start = text.find(marker)
        if start < 0:
            problems.append("%s: no \"%s\" to check the format list in" % (path, marker))
            continue
        end = text.find("\n\n", start + len(marker) + 2)
        paragraph = text[start:end if end >= 0 else len(text)]
        if path.endswith(".cc"):
            paragraph = paragraph.split("\n")[0]
        for name in filter(None, names):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(name), paragraph):
                problems.append("%s: the format list after \"%s\" lacks %s (in %s)" %
                                (path, marker, name, "core/src/formats/format_registry.cc"))
    return problems


def main():
    checks = {"paths": check_paths, "packets": check_packets, "formats": check_formats}
    if len(sys.argv) != 3 or sys.argv[1] not in checks:
        sys.stderr.write("usage: check_docs.py paths|packets|formats SOURCE_DIR\n")
        return 2
    problems = checks[sys.argv[1]](os.path.abspath(sys.argv[2]))
    for p in problems:
        print(p)
    print("%s: %d problem%s" % (sys.argv[1], len(problems), "" if len(problems) == 1 else "s"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
