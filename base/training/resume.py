"""Start verl on this RayJob's own checkpoint folder, then run the command given (verl's trainer).

A run's checkpoints live in trainer.default_local_dir of its run.yaml, one folder below it per
RayJob, named as the RayJob (RLGEN_RAYJOB, set on the head by the run's kustomization). verl's
resume_mode auto loads the newest global_step_N of the folder it is given: a retry of this
RayJob (KubeRay's backoffLimit) finds its own, and a new RayJob (an edit, a new size, a run
made again under an old name) finds an empty folder and starts from step 0, never another
RayJob's checkpoint saved for another world size or model.

trainer.resume_from_path in run.yaml (rlgen run new/set --resume-from) names another RayJob's
folder: while this RayJob has saved nothing yet, verl loads that folder's newest checkpoint
(resume_mode resume_path); once it has saved, its own.
"""
import os
import sys

import yaml
# The function verl's trainer itself resumes with: the step its tracker file names.
from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

CONFIGS = os.path.dirname(os.path.abspath(__file__))


def trainer_config():
    """The trainer section verl composes: the base, then the run's file on top."""
    trainer = {}
    for name in ("trainer.yaml", "run.yaml"):
        path = os.path.join(CONFIGS, name)
        if os.path.exists(path):
            with open(path) as f:
                trainer.update((yaml.safe_load(f) or {}).get("trainer") or {})
    return trainer


def overrides(trainer, rayjob):
    """verl's Hydra overrides for this RayJob: its own folder, and where it resumes from."""
    root = trainer.get("default_local_dir")
    if not root or not rayjob:
        raise SystemExit("trainer.default_local_dir (run.yaml) and RLGEN_RAYJOB (the head's environment) "
                         "name this RayJob's checkpoint folder: rlgen run set restores both")
    own = os.path.join(root, rayjob)
    out = [f"trainer.default_local_dir={own}", "trainer.resume_mode=auto"]
    source = trainer.get("resume_from_path")
    if not source or find_latest_ckpt_path(own):
        return out
    step = find_latest_ckpt_path(source)
    if step is None:
        raise SystemExit(f"trainer.resume_from_path: {source} holds no checkpoint (no latest_checkpointed_iteration.txt "
                         "naming a global_step_N folder); remove --resume-from with rlgen run set")
    return [out[0], "trainer.resume_mode=resume_path", f"trainer.resume_from_path={step}"]


def main(argv):
    args = overrides(trainer_config(), os.environ.get("RLGEN_RAYJOB", ""))
    print("checkpoints: " + " ".join(args), flush=True)
    os.execvp(argv[0], [*argv, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
