"""The shapes issue #28 removes, found by reading the syntax tree; each finding names its line.

The definitions (docs/architecture.md, "The census", says the same):

- mode check: a branch on "single node or cluster?": a read of a `single_node` flag; a read of the
  `zookeeper_connect` setting outside config/; a comparison with a `BrokerMode` member or a read of
  `zookeeper_mode`; an `is None`/`is not None` test of what only a cluster member has (the replica
  manager `replicas`, `controller`, `zk_broker_configs`, `txn_verification` reached through `services`;
  a bare `replicas` in handlers/ or server/broker.py; `member`, the ZooKeeper membership, in
  server/broker.py); an `isinstance` against a `Zk*` or `SingleNode*` class or `ReplicaManager`.
  Modules that exist only on a cluster member (`CLUSTER_ONLY_MODULES`) are not looked at.
- post-construction wiring: an assignment to an attribute of an object that is not `self` (`x.a = v`,
  `self.x.a = v`; not an instance its own class's code is building) whose value is a hook (a lambda;
  a `partial`; an uncalled function of the same module that no variable there is named after, or
  method of the package that is no data attribute; a call of a function returning a `Callable`) or
  a collaborator (a constructor call of a class of the package that is neither a dataclass, an enum,
  an error nor a protocol message; a call or `await` of a function returning one; a local name or
  `self` attribute holding one) or a setting (read straight from `config` or `self.config`).
- `Any` collaborator: a parameter (not `*args`/`**kwargs`) or attribute annotated `Any` or
  `Any | None` (or a module's alias of `Any`, `Group = Any`) whose name is not one of the message
  values in `DATA_NAMES`.
- handler-side wait: in handlers/, an `await` of a wait (a call named `wait`, `wait_for`,
  `wait_for_*`, `hold_for_*`, `replication_outcome` or `*_replicated`), or a subscription to append
  events (a `waiting_on(...)` context).
- hand-made leader check, outside cluster/ (which owns leadership today): a read of another object's
  `leading` map; a leadership query (`leader_epoch`, `leader_refusal`, `replica_refusal`,
  `still_leading_since`, `leader_since_epoch`, `under_min_isr`, `leader_epoch_start_offset`) asked
  of `leadership` or `replicas`; an equality of a `leader`/`leader_id` with a `node_id` (leadership
  read from the metadata cache by hand).
- log append outside storage/: a call of `Log.append` as leader (an `append(...)` given a
  `leader_epoch=`) or of `append_as_follower(...)` anywhere but storage/ and partition/ (the replica
  manager's one entry, `append_records`): after #28 only partition/ makes them.
- log read outside storage/: a call of `Log.read` (a `read(...)` given an `isolation=` or a
  `min_one_message=`) anywhere but storage/ and partition/ (a Fetch's one entry,
  `partition/partition_read.py::read_from_log`; the share partitions' `partition/share/log_reader.py`).
  The coordinator runtime's load of its partition reads the log too, as Kafka's CoordinatorLoaderImpl.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tools.architecture.modules import Module, Source

MODE_CHECK = "mode-check"
WIRING = "post-construction-wiring"
ANY = "any-collaborator"
HANDLER_WAIT = "handler-side-wait"
LEADER_CHECK = "hand-made-leader-check"
LOG_APPEND = "log-append-outside-storage"
LOG_READ = "log-read-outside-storage"
PATTERNS = (MODE_CHECK, WIRING, ANY, HANDLER_WAIT, LEADER_CHECK, LOG_APPEND, LOG_READ)

#: Fields of `Services` (and names bound from them) that exist only on a cluster member.
CLUSTER_ONLY_SERVICES = frozenset({"replicas", "controller", "zk_broker_configs", "txn_verification"})
#: Modules that exist only on a cluster member: nothing in them asks which mode the broker runs in.
CLUSTER_ONLY_MODULES = (
    "odradek/cluster/controller/",
    "odradek/cluster/zookeeper/",
    "odradek/cluster/zk_",
    "odradek/cluster/metadata/zk_",
    "odradek/server/zookeeper_member.py",
)
#: Message values typed `Any` on purpose (a decoded request, a record's key): data, not collaborators.
DATA_NAMES = frozenset(
    {"request", "response", "message", "value", "key", "record", "other", "default", "explicit_default"}
)
LEADERSHIP_QUERIES = frozenset(
    {
        "leader_epoch",
        "leader_refusal",
        "replica_refusal",
        "still_leading_since",
        "leader_since_epoch",
        "under_min_isr",
        "leader_epoch_start_offset",
    }
)
LEADERSHIP_HOLDERS = frozenset({"leadership", "replicas"})
#: Who owns leadership: cluster/ (the replica manager, the controller) and partition/ (the Leadership
#: protocol, a single node's local leadership; the replica manager's data half moves there with #28).
LEADERSHIP_OWNERS = ("odradek/cluster/", "odradek/partition/")
_WAIT_NAME = re.compile(r"^(wait|wait_for|wait_for_\w+|hold_for_\w+|replication_outcome|\w+_replicated)$")


@dataclass(frozen=True, slots=True)
class Finding:
    pattern: str
    kind: str
    path: str
    line: int
    text: str


def find_all(source: Source, modules: list[Module]) -> list[Finding]:
    index = _PackageIndex(source)
    found: list[Finding] = []
    for module in modules:
        found += mode_checks(module)
        found += wiring(module, index)
        found += any_collaborators(module)
        found += handler_waits(module)
        found += leader_checks(module)
        found += log_appends(module)
        found += log_reads(module)
    return sorted(found, key=lambda f: (f.pattern, f.path, f.line, f.kind))


# ----- mode checks ------------------------------------------------------------------------------------


def mode_checks(module: Module) -> Iterator[Finding]:
    path = module.relative
    if path.startswith(CLUSTER_ONLY_MODULES):
        return
    in_config = path.startswith("odradek/config/")
    bare_replicas = path.startswith("odradek/handlers/") or path == "odradek/server/broker.py"
    for node in ast.walk(module.tree):
        name = _loaded_name(node)
        if name == "single_node":
            yield _finding(MODE_CHECK, "single_node flag", module, node)
        elif name == "zookeeper_connect" and isinstance(node, ast.Attribute) and not in_config:
            yield _finding(MODE_CHECK, "zookeeper.connect read", module, node)
        elif name == "zookeeper_mode" and isinstance(node, ast.Attribute):
            yield _finding(MODE_CHECK, "zookeeper_mode read", module, node)
        elif isinstance(node, ast.Compare):
            if any(_is_broker_mode(o) for o in [node.left, *node.comparators]):
                yield _finding(MODE_CHECK, "BrokerMode comparison", module, node)
            elif _is_none_test(node):
                chain = _chain(node.left)
                if (chain[-1] in CLUSTER_ONLY_SERVICES and "services" in chain[:-1]) or (
                    len(chain) == 1
                    and (
                        (chain[0] == "replicas" and bare_replicas)
                        or (chain[0] == "member" and path == "odradek/server/broker.py")
                    )
                ):
                    yield _finding(MODE_CHECK, f"{chain[-1]} is None", module, node)
                elif chain[-2:] == ["self", "member"] and path == "odradek/server/broker.py":
                    yield _finding(MODE_CHECK, "member is None", module, node)
        elif isinstance(node, ast.Call) and _called(node) == "isinstance" and len(node.args) == 2:
            classes = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            names = [_chain(c)[-1] for c in classes]
            if any(n.startswith(("Zk", "SingleNode")) or n == "ReplicaManager" for n in names):
                yield _finding(MODE_CHECK, "isinstance of a mode's class", module, node)


def _is_broker_mode(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and _chain(node.value)[-1:] == ["BrokerMode"]


def _is_none_test(node: ast.Compare) -> bool:
    return (
        len(node.ops) == 1
        and isinstance(node.ops[0], ast.Is | ast.IsNot)
        and isinstance(node.comparators[0], ast.Constant)
        and node.comparators[0].value is None
    )


# ----- post-construction wiring -----------------------------------------------------------------------


class _PackageIndex:
    """What the package defines: function and method names (not properties), the functions that
    return a hook or a collaborator, and the classes whose instances are collaborators."""

    def __init__(self, source: Source) -> None:
        self.functions: set[str] = set()
        self.callable_aliases: set[str] = set()
        self.data_classes: set[str] = set()
        self.classes: set[str] = set()
        #: Attribute names declared as data (annotated without `Callable`, or set to a constant).
        self.data_attributes: set[str] = set()
        #: Each module's own functions (not methods' names), by module path.
        self.module_functions: dict[str, set[str]] = {}
        returns: dict[str, str] = {}
        for module in source.modules.values():
            message_module = module.relative.startswith("odradek/protocol/")
            # a name that is also a parameter or a variable somewhere in the module is not read as one
            variables = {n.arg for n in ast.walk(module.tree) if isinstance(n, ast.arg)} | {
                n.id
                for n in ast.walk(module.tree)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            self.module_functions[module.relative] = {
                n.name
                for n in ast.walk(module.tree)
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name not in variables
            }
            for node in ast.walk(module.tree):
                if isinstance(node, ast.AnnAssign) and "Callable" not in ast.unparse(node.annotation):
                    self.data_attributes.add(_chain(node.target)[-1])
                elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                    for target in node.targets:
                        if isinstance(target, ast.Attribute):
                            self.data_attributes.add(target.attr)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if not any(_chain(d)[-1] in ("property", "cached_property") for d in node.decorator_list):
                        self.functions.add(node.name)
                    if node.returns is not None:
                        returns[node.name] = ast.unparse(node.returns)
                elif isinstance(node, ast.ClassDef):
                    dataclass_ = any(_chain(_decorator(d))[-1] == "dataclass" for d in node.decorator_list)
                    enum_or_error = any(
                        _chain(b)[-1].endswith(("Enum", "Error", "Exception", "Struct", "Protocol"))
                        for b in node.bases
                    )
                    if dataclass_ or message_module or enum_or_error:
                        self.data_classes.add(node.name)
                    else:
                        self.classes.add(node.name)
            for statement in module.tree.body:
                if (
                    isinstance(statement, ast.Assign)
                    and "Callable[" in ast.unparse(statement.value)
                    and isinstance(statement.targets[0], ast.Name)
                ):
                    self.callable_aliases.add(statement.targets[0].id)
        words = re.compile(r"\w+")
        self.hook_factories = {
            name
            for name, annotation in returns.items()
            if "Callable" in annotation or set(words.findall(annotation)) & self.callable_aliases
        }
        self.collaborator_factories = {
            name for name, annotation in returns.items() if set(words.findall(annotation)) & self.classes
        }


def wiring(module: Module, index: _PackageIndex) -> Iterator[Finding]:
    local_functions = index.module_functions[module.relative]
    for scope in _scopes(module.tree):
        held = _collaborator_names(scope, index, local_functions)
        building = _instances_built(scope)
        for node in _own_nodes(scope):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if not isinstance(target, ast.Attribute) or _is_self(target.value):
                    continue
                if isinstance(target.value, ast.Name) and target.value.id in building:
                    continue
                kind = _wired(value, index, held, local_functions)
                if kind is not None:
                    yield _finding(WIRING, kind, module, node)


def _wired(value: ast.expr, index: _PackageIndex, held: set[str], local_functions: set[str]) -> str | None:
    if isinstance(value, ast.Lambda):
        return "hook"
    if _reads_setting(value):
        return "setting"
    if isinstance(value, ast.Await):
        awaited = value.value
        if isinstance(awaited, ast.Call) and _called(awaited) in index.collaborator_factories:
            return "collaborator"
        return None
    if isinstance(value, ast.Call):
        called = _called(value)
        if called == "partial" or called in index.hook_factories:
            return "hook"
        if called in index.classes or called in index.collaborator_factories:
            return "collaborator"
        return None
    if isinstance(value, ast.Name | ast.Attribute):
        chain = _chain(value)
        if ".".join(chain) in held:
            return "collaborator"
        if isinstance(value, ast.Name):
            return "hook" if value.id in local_functions else None
        name = chain[-1]
        if name in index.functions and name not in index.data_attributes and not name.startswith("__"):
            return "hook"
    return None


def _reads_setting(value: ast.expr) -> bool:
    """A broker setting read straight from the configuration (`self.config.x`, `config.x or None`)."""
    operands = value.values if isinstance(value, ast.BoolOp) else [value]
    return any(
        isinstance(operand, ast.Attribute) and _chain(operand.value) in (["config"], ["self", "config"])
        for operand in operands
    )


def _instances_built(scope: ast.AST) -> set[str]:
    """In a class, the local names its own code binds to a new instance of it (`segment = cls(...)`):
    setting their attributes is construction, not wiring."""
    if not isinstance(scope, ast.ClassDef):
        return set()
    built = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            chain = _chain(node.value.func)
            if chain[0] in ("cls", scope.name) or chain[-1] == "__new__":
                built |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return built


def _collaborator_names(scope: ast.AST, index: _PackageIndex, local_functions: set[str]) -> set[str]:
    """Local names (and `self.x` attributes of the enclosing class) bound to a collaborator."""
    held: set[str] = set()
    for node in ast.walk(scope):
        if (
            isinstance(node, ast.Assign)
            and _wired(node.value, index, set(), local_functions) == "collaborator"
        ):
            for target in node.targets:
                for element in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(element, ast.Name | ast.Attribute):
                        held.add(".".join(_chain(element)))
        elif (
            isinstance(node, ast.AnnAssign)
            and node.value is not None
            and _wired(node.value, index, set(), local_functions) == "collaborator"
        ):
            held.add(".".join(_chain(node.target)))
    return held


def _scopes(tree: ast.Module) -> Iterator[ast.AST]:
    """The module, and each class (whose methods share their `self` attributes)."""
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield node


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope, not those of the classes nested in it (each class is a scope of its own)."""
    for child in ast.iter_child_nodes(scope):
        if isinstance(child, ast.ClassDef):
            continue
        yield child
        yield from _own_nodes(child)


# ----- Any collaborators ------------------------------------------------------------------------------


def any_collaborators(module: Module) -> Iterator[Finding]:
    aliases = _any_aliases(module)
    class_level = {
        id(statement)
        for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef)
        for statement in node.body
    }
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if _is_any(arg.annotation, aliases) and arg.arg not in DATA_NAMES:
                    kind = "constructor parameter" if node.name == "__init__" else "parameter"
                    yield _finding(ANY, f"{kind} {arg.arg}", module, arg)
        elif isinstance(node, ast.AnnAssign) and _is_any(node.annotation, aliases):
            name = _chain(node.target)[-1]
            if name not in DATA_NAMES and (isinstance(node.target, ast.Attribute) or id(node) in class_level):
                yield _finding(ANY, f"attribute {name}", module, node)


def _is_any(annotation: ast.expr | None, aliases: frozenset[str]) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation).replace("typing.", "")
    return any(text in (a, f"{a} | None", f"None | {a}", f"Optional[{a}]") for a in ("Any", *aliases))


def _any_aliases(module: Module) -> frozenset[str]:
    """Module-level names for `Any` (`Group = Any`): what they annotate is `Any` too."""
    return frozenset(
        target.id
        for statement in module.tree.body
        if isinstance(statement, ast.Assign) and ast.unparse(statement.value) in ("Any", "typing.Any")
        for target in statement.targets
        if isinstance(target, ast.Name)
    )


# ----- handler-side waits -----------------------------------------------------------------------------


def handler_waits(module: Module) -> Iterator[Finding]:
    if not module.relative.startswith("odradek/handlers/"):
        return
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            called = _called(node.value)
            if _WAIT_NAME.match(called):
                yield _finding(HANDLER_WAIT, f"await {called}", module, node)
        elif isinstance(node, ast.With):
            for item in node.items:
                if isinstance(item.context_expr, ast.Call) and _called(item.context_expr) == "waiting_on":
                    yield _finding(HANDLER_WAIT, "waiting_on append events", module, node)


# ----- hand-made leader checks ------------------------------------------------------------------------


def leader_checks(module: Module) -> Iterator[Finding]:
    if module.relative.startswith(LEADERSHIP_OWNERS):
        return
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and node.attr == "leading" and not _is_self(node.value):
            yield _finding(LEADER_CHECK, "reads the replica manager's leading map", module, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            holder = _chain(node.func.value)[-1]
            if node.func.attr in LEADERSHIP_QUERIES and holder in LEADERSHIP_HOLDERS:
                yield _finding(LEADER_CHECK, f"asks {holder}.{node.func.attr}", module, node)
        elif (
            isinstance(node, ast.Compare)
            and len(node.comparators) == 1
            and isinstance(node.ops[0], ast.Eq | ast.NotEq)
        ):
            names = {_chain(node.left)[-1], _chain(node.comparators[0])[-1]}
            if names & {"leader", "leader_id"} and "node_id" in names:
                yield _finding(LEADER_CHECK, "compares a leader with its own id", module, node)


# ----- log appends -----------------------------------------------------------------------------------


def log_appends(module: Module) -> Iterator[Finding]:
    if module.relative.startswith(("odradek/storage/", "odradek/partition/")):
        return
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "append_as_follower":
                yield _finding(LOG_APPEND, "append as follower", module, node)
            elif node.func.attr == "append" and any(k.arg == "leader_epoch" for k in node.keywords):
                yield _finding(LOG_APPEND, "append as leader", module, node)


# ----- log reads -------------------------------------------------------------------------------------


def log_reads(module: Module) -> Iterator[Finding]:
    if module.relative.startswith(("odradek/storage/", "odradek/partition/")):
        return
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "read"
            and any(k.arg in ("isolation", "min_one_message") for k in node.keywords)
        ):
            yield _finding(LOG_READ, "log read", module, node)


# ----- helpers ----------------------------------------------------------------------------------------


def _finding(pattern: str, kind: str, module: Module, node: ast.AST) -> Finding:
    line = getattr(node, "lineno", 0)
    text = module.text_lines[line - 1].strip() if line else ""
    return Finding(pattern, kind, module.relative, line, text)


def _chain(node: ast.expr) -> list[str]:
    """`a.b.c` as ["a", "b", "c"]; a call or subscript in the chain ends it (`f().x` is ["?", "x"])."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    names.append(node.id if isinstance(node, ast.Name) else "?")
    return names[::-1]


def _called(call: ast.Call) -> str:
    return _chain(call.func)[-1]


def _decorator(node: ast.expr) -> ast.expr:
    return node.func if isinstance(node, ast.Call) else node


def _loaded_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return node.attr
    return None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")
