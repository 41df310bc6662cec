"""Rules that no schema holds. Every rule takes the rendered objects of the whole repository
and yields findings naming the object; none of them needs a cluster. A new rule is a function
in one of these modules, listed in :data:`RULES`; a plugin's rules come through its
``rlgen_validate_rules`` hook."""
from __future__ import annotations

from typing import Iterable

from rlgen.rules.agent import agent_rules
from rlgen.rules.base import Finding, Rendered, by_run_file
from rlgen.rules.manifests import image_rules, json_rules, substitution_rules
from rlgen.rules.rayjob import rayjob_rules, trainer_rules, with_trainer_configs
from rlgen.rules.references import reference_rules
from rlgen.rules.sandbox import alb_rules, mcp_rules, sandbox_isolation_rules, upstream_ingress_rules
from rlgen.rules.sync import argo_rules, example_domain_rules, ordering_rules
from rlgen.rules.tools import mcp_warnings, secret_value_rules, tool_rules

__all__ = ["Finding", "Rendered", "by_run_file", "check", "warnings"]

RULES = (rayjob_rules, trainer_rules, json_rules, mcp_rules, alb_rules, sandbox_isolation_rules, upstream_ingress_rules, image_rules, substitution_rules,
         agent_rules, ordering_rules, argo_rules, example_domain_rules, tool_rules, secret_value_rules)
#: Findings shown as warnings: they never change the exit code.
WARNINGS = (mcp_warnings,)


def check(objects: list[Rendered], external_secrets: Iterable[str] = (), plugins=None) -> list[Finding]:
    """Every rule's findings; ``plugins``, a ``(Hooks, Context)`` pair of the repository's
    selection, adds its plugins' ``rlgen_validate_rules``."""
    rules = (*RULES, reference_rules(set(external_secrets)))
    found = [f for rule in rules for f in rule(objects)]
    if plugins is not None:
        hooks, ctx = plugins
        found += hooks.validate_rules(ctx, with_trainer_configs(objects))
    return found


def warnings(objects: list[Rendered]) -> list[Finding]:
    return [f for rule in WARNINGS for f in rule(objects)]
