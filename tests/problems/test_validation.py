"""validate_problem_source / validate_many: the rules, each refused with its name, in a sandboxed child."""

from __future__ import annotations

import pytest

from problems.catalog import (
    ProblemRejected,
    ValidationItem,
    get_builtin,
    validate_many,
    validate_problem_source,
)

HEAD = "import torch\nimport torch.nn as nn\n\n"


def _problem(forward: str = "return x * 2", inputs: str = "[torch.randn(4, 8)]", extra: str = "") -> str:
    return (
        HEAD
        + extra
        + "class Model(nn.Module):\n"
        + f"    def forward(self, x):\n        {forward}\n\n"
        + f"def get_inputs():\n    return {inputs}\n\n"
        + "def get_init_inputs():\n    return []\n"
    )


def test_a_builtin_problem_is_accepted_with_its_roofline() -> None:
    problem = get_builtin("add_layer_norm")
    info = validate_problem_source(problem.source, problem.name, level=2)
    assert info.id == problem.id and info.level == 2
    assert info.roofline["bytes"] == problem.roofline["bytes"]
    assert {"fused", "normalization"} <= set(info.tags)
    assert info.settings["atol"] == 1e-2


# Each bad problem and the rule its refusal must name; all run in one child (one torch import).
BAD = {
    "import": _problem(extra="import no_such_module_kjudge\n"),
    "definitions": HEAD
    + "Model = 3\n\ndef get_inputs():\n    return []\n\ndef get_init_inputs():\n    return []\n",
    "init_inputs": _problem().replace("return []\n", "return 5\n"),
    "inputs_are_tensors": _problem(inputs="[torch.randn(3), 7]"),
    "forward": _problem(forward="return x @ x"),
    "memory": _problem(inputs="[torch.randn(40000, 40000)]"),
    "small_sizes": _problem(extra="n = 4\nKJUDGE_SMALL = {'m': 2}\n"),
}


def test_each_broken_rule_is_named() -> None:
    items = [ValidationItem(name=f"bad_{rule}", source=src) for rule, src in BAD.items()]
    items.append(ValidationItem(name="good", source=_problem(), level=1))
    outcomes = validate_many(items)
    by_name = {o.name: o for o in outcomes}
    for rule in BAD:
        outcome = by_name[f"bad_{rule}"]
        assert outcome.info is None and outcome.rule == rule, (rule, outcome)
        assert outcome.message
    good = by_name["good"]
    assert good.ok and good.info.roofline["bytes"] == 2 * 4 * 8 * 4 and good.info.level == 1
    assert "Traceback" not in "".join(o.message or "" for o in outcomes)
    assert "no_such_module_kjudge" in by_name["bad_import"].message
    assert "line" in by_name["bad_forward"].message  # points at the author's own line


def test_static_errors_are_refused_without_a_child() -> None:
    with pytest.raises(ProblemRejected, match="rule 'settings'.*get_inputs"):
        validate_problem_source("import torch\nclass Model: pass\n")
    with pytest.raises(ProblemRejected, match="rule 'settings'.*syntax"):
        validate_problem_source("def (:\n")
    with pytest.raises(ProblemRejected, match="rule 'settings'.*KJUDGE"):
        validate_problem_source(_problem(extra="KJUDGE = {'atol': 'big'}\n"))


def test_a_problem_without_meta_kernels_falls_back_to_the_cpu() -> None:
    # .item() on a meta tensor fails; on CPU the problem is fine.
    source = _problem(forward="return x * float(x.abs().sum().item() > 0)")
    info = validate_problem_source(source, "needs_cpu")
    assert info.roofline["method"] == "cpu"


def test_a_hanging_problem_times_out() -> None:
    with pytest.raises(ProblemRejected, match="rule 'timeout'"):
        validate_problem_source(_problem(extra="while True:\n    pass\n"), "hang", timeout_s=6)


def test_a_crash_only_costs_its_own_verdict() -> None:
    # os._exit kills the child mid-batch; the others still get their verdicts.
    items = [
        ValidationItem(name="first", source=_problem()),
        ValidationItem(name="exits", source=_problem(extra="import os\nos._exit(3)\n")),
        ValidationItem(name="last", source=_problem(forward="return x + 1")),
    ]
    first, exits, last = validate_many(items)
    assert first.ok and last.ok
    assert not exits.ok and exits.rule == "import" and "exit status 3" in exits.message
