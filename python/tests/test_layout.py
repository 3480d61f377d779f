"""The package's layout (issue 28), read from the source with ``ast``, nothing imported.

- No module imports one of the package's own modules inside a function (or any other
  indented block but ``if TYPE_CHECKING:``, which never runs), except the lazy imports of
  heavy optional parts listed in LAZY with the reason each is lazy. The list must match
  exactly: a stray import fails, and so does an entry whose import is gone.
- Each lazy import says why on the comment line above it (``# Lazy: ...``).
- The process's shared state (``_state``) imports leaves only, so every module can use it.
- The serve loop (``_serve``) is imported by the package's ``__init__`` only, and the
  imports that run, lazy ones included, form no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "afterburn_runtime"
PACKAGE = "afterburn_runtime"

# (file, enclosing function, imported module) -> why it is imported lazily. Only optional
# parts whose import costs start-up time (the package's own import is kept cheap for cold
# start, README "Layout") belong here; _template._PRELOAD imports the ones a forked worker
# may need, so that workers share them.
LAZY = {
    ("__init__.py", "__getattr__", "_logger"): "logging, for the applications that use RequestIdFilter only",
    ("__init__.py", "serve", "_typed"): "typed handlers only: typing, inspect, dataclasses and json",
    ("__init__.py", "serve", "_shapes"): "handler shapes only (§13): their adapters import json, base64, urllib.parse",
    ("__init__.py", "serve.runner", "_aio"): "asyncio (tens of ms), for async handlers and async bodies only",
    ("__init__.py", "serve_wsgi", "_wsgi"): "the WSGI adapter, loaded when asked for (urllib.parse)",
    ("__init__.py", "serve_asgi", "_asgi"): "the ASGI adapter, loaded when asked for (asyncio, urllib.parse)",
    ("testing.py", "call", "_typed"): "typed handlers only: typing, inspect, dataclasses and json",
    ("testing.py", "call", "_shapes"): "handler shapes only (§13): their adapters import json, base64, urllib.parse",
    ("testing.py", "call.runner", "_aio"): "asyncio, for async handlers and async bodies only",
    ("testing.py", "call_wsgi", "_wsgi"): "the WSGI adapter, loaded when asked for (urllib.parse)",
    ("testing.py", "call_asgi", "_aio"): "the ASGI adapter's event loop (asyncio), loaded when asked for",
    ("testing.py", "call_asgi", "_asgi"): "the ASGI adapter, loaded when asked for (asyncio, urllib.parse)",
    ("_request.py", "Request.cancellation", "_cancel"): "threading, for the requests that ask for their cancellation",
    ("_request.py", "Request.logger", "_logger"): "logging, for the handlers that ask for the logger",
    ("_request.py", "Request.aread", "_aio"): "asyncio: loaded already in an async handler, never by a sync one",
    ("_serve.py", "run", "_template"): "fork mode only (§2.6): ctypes, socket, tempfile and a dlopen for prctl",
    ("_serve.py", "run", "_lanes"): "lanes only (§2.5): threading, which a worker of one lane never imports",
    ("_exchange.py", "_respond_with_alarm", "_alarm"): "the deadline alarm (signal, threading), "
                                                       "for exchanges with a deadline on the main thread only",
}


class Import(NamedTuple):
    file: str
    line: int
    where: str  # the enclosing function's qualified name; "" at module level
    target: str  # the module of the package imported ("__init__" for the package itself)
    type_only: bool  # under a module-level `if TYPE_CHECKING:`, which never runs
    source: str


def _modules() -> list[str]:
    return sorted(p.name for p in SRC.glob("*.py"))


def _target(name: str) -> str:
    """The module of the package that an imported name is: a submodule, or the package."""
    return name if (SRC / f"{name}.py").exists() else "__init__"


def _own(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules a statement imports; [] when it imports none."""
    if isinstance(node, ast.ImportFrom):
        if node.level == 0 and node.module != PACKAGE and not (node.module or "").startswith(PACKAGE + "."):
            return []
        if node.level > 1:
            return ["__init__"]  # above the package: not a layout this package has
        module = node.module if node.level else node.module[len(PACKAGE) + 1 :] if node.module != PACKAGE else ""
        if module:
            return [_target(module.split(".")[0])]
        return sorted({_target(alias.name) for alias in node.names})
    return sorted({_target(alias.name.split(".")[1]) if "." in alias.name else "__init__"
                   for alias in node.names if alias.name == PACKAGE or alias.name.startswith(PACKAGE + ".")})


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports(file: str) -> list[Import]:
    text = (SRC / file).read_text()
    lines = text.splitlines()
    found: list[Import] = []

    def visit(node: ast.AST, scope: list[str], type_only: bool, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _own(child):
                    where = ".".join(scope) if scope or top else "<indented>"
                    found.append(Import(file, child.lineno, where, target, type_only,
                                        lines[child.lineno - 1].strip()))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, [*scope, child.name], type_only, False)
            elif top and _is_type_checking(child):
                visit(child, scope, True, True)
            else:
                # Any other block (if, try, with, loops) keeps its scope; at module level
                # it is no longer "top": an import there is indented.
                visit(child, scope, type_only, top and not isinstance(child, ast.stmt))

    visit(ast.parse(text, file), [], False, True)
    return found


def _local(imp: Import) -> bool:
    return bool(imp.where) and not imp.type_only


ALL = [imp for file in _modules() for imp in imports(file)]


def test_the_source_is_found() -> None:
    assert {"__init__.py", "_serve.py", "_state.py", "_exchange.py"} <= set(_modules()), SRC


def test_no_function_local_import_of_the_package_but_the_listed_lazy_ones() -> None:
    local = [imp for imp in ALL if _local(imp)]
    stray = [imp for imp in local if (imp.file, imp.where, imp.target) not in LAZY]
    assert not stray, "imports of the package's own modules inside a function (import it at the top, or " \
        "pass it in; a lazy import of a heavy optional part goes into LAZY with its reason):\n" + \
        "\n".join(f"  {i.file}:{i.line} in {i.where}: {i.source}" for i in stray)
    gone = sorted(set(LAZY) - {(imp.file, imp.where, imp.target) for imp in local})
    assert not gone, f"LAZY lists imports that are no longer there; remove them: {gone}"


@pytest.mark.parametrize("imp", [imp for imp in ALL if _local(imp)], ids=lambda i: f"{i.file}:{i.where}:{i.target}")
def test_each_lazy_import_says_why(imp: Import) -> None:
    lines = (SRC / imp.file).read_text().splitlines()
    n = imp.line - 2
    while n >= 0 and lines[n].strip().startswith(("from ", "import ")):
        n -= 1  # one comment may stand above a group of lazy imports
    got = lines[n].strip() if n >= 0 else ""
    assert got.startswith("# Lazy: "), f"{imp.file}:{imp.line}: {imp.source}\n  got above it: {got!r}\n" \
        "  want: a comment '# Lazy: <why this part is imported only when needed>'"


def _runtime_imports(module: str) -> set[str]:
    """The package's modules that ``module`` imports when it runs (lazily or not)."""
    return {imp.target for imp in ALL if imp.file == f"{module}.py" and not imp.type_only} - {module}


def test_the_shared_state_module_imports_leaves_only() -> None:
    leaves = {m[:-3] for m in _modules() if not _runtime_imports(m[:-3])}
    got = _runtime_imports("_state")
    assert got <= leaves, f"_state imports {sorted(got - leaves)}, which are not leaves (leaves: {sorted(leaves)})"


def test_only_the_package_imports_the_serve_loop() -> None:
    got = sorted({imp.file for imp in ALL if imp.target == "_serve" and not imp.type_only})
    assert got == ["__init__.py"], f"_serve is imported by {got}; lower modules take _state or _exchange instead"


def test_the_imports_that_run_form_no_cycle() -> None:
    graph = {m[:-3]: _runtime_imports(m[:-3]) for m in _modules()}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            cycle = path[path.index(module) :] + [module]
            pytest.fail("an import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*path, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
