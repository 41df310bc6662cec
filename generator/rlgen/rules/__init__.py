"""Rules that no schema holds. Every rule takes the rendered objects of the whole repository
and yields findings naming the object; none of them needs a cluster. A new rule is a function
in one of these modules, listed in :data:`RULES`; a plugin's rules come through its
``rlgen_validate_rules`` hook."""
from __future__ import annotations

from typing import Iterable

from rlgen.rules.agent import agent_rules
from rlgen.rules.base import Finding, Rendered, by_run_file, findings_by_run_file, run_file
from rlgen import pool
from rlgen.rules.node_pool import pool_rules
from rlgen.rules.manifests import image_rules, json_rules, substitution_rules
from rlgen.rules.rayjob import rayjob_rules, trainer_rules, with_trainer_configs
from rlgen.rules.references import reference_rules
from rlgen.rules.sandbox import alb_rules, mcp_rules, sandbox_isolation_rules, upstream_ingress_rules
from rlgen.rules.sync import argo_rules, example_domain_rules, ordering_rules
from rlgen.rules.tools import mcp_warnings, secret_value_rules, tool_response_rules, tool_rules
from rlgen.spec import Spec

__all__ = ["Finding", "Rendered", "by_run_file", "check", "findings_by_run_file", "run_file", "warnings"]

RULES = (rayjob_rules, trainer_rules, json_rules, mcp_rules, alb_rules, sandbox_isolation_rules, upstream_ingress_rules, image_rules, substitution_rules,
         agent_rules, ordering_rules, argo_rules, example_domain_rules, tool_rules, tool_response_rules,
         secret_value_rules)
#: Findings shown as warnings: they never change the exit code.
WARNINGS = (mcp_warnings,)


def check(objects: list[Rendered], external_secrets: Iterable[str] = (), plugins=None,
          runs: Iterable[str] = ()) -> list[Finding]:
    """Every rule's findings, a run's objects named by its ``run.yaml`` (``runs``: the run
    names); ``plugins``, a ``(Hooks, Context)`` pair of the repository's selection, adds its
    plugins' ``rlgen_validate_rules``, which see the objects so named."""
    runs = list(runs)
    rules = (*RULES, reference_rules(set(external_secrets)))
    found = findings_by_run_file([f for rule in rules for f in rule(objects)], runs, Spec.run_config_key)
    if plugins is not None:
        hooks, ctx = plugins
        configured = by_run_file(with_trainer_configs(objects), runs, Spec.run_config_key)
        found += list(pool_rules(configured, pool.of(ctx.spec)))
        found += hooks.validate_rules(ctx, configured)
    return found


def warnings(objects: list[Rendered], runs: Iterable[str] = ()) -> list[Finding]:
    return findings_by_run_file([f for rule in WARNINGS for f in rule(objects)], runs, Spec.run_config_key)
