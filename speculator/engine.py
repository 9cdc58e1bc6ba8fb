"""The real engine: target + draft models, grounded drafting, exact output.

A Pipeline (speculator/pipeline.py) over the local generator
(speculator/generators/local.py). This module loads the models, builds their
sessions and prices drafts by this machine's verify curve; what the bench and
the model tests read of the generator (its sessions, slots, controllers, the
last decode's outcome) is exposed here.
"""

from __future__ import annotations

import logging
import os

from . import provision
from .config import EngineConfig
from .controller import Controller
from .generators.local import LocalGenerator, LocalPrompt
from .models import Model, check_same_vocab, resolve_path
from .outcome import DecodeOutcome
from .pipeline import Pipeline
from .session import Session
from .slots import DiskSlots, RamSlots, model_fingerprint
from .threads import ThreadPolicy
from .totals import Totals
from .types import ProgressCallback
from .verify_curve import CurveStore, machine_shapes

log = logging.getLogger(__name__)


class SpeculativeEngine(Pipeline[LocalPrompt]):
    def __init__(self, target: Model, draft: Model | None, config: EngineConfig):
        threads = config.threads or os.cpu_count() or 2
        self.target = target
        self.draft = draft
        self.config = config
        self._fingerprint: str | None = None  # the target file's, read once
        # One policy for both models: they take turns on the same cores.
        policy = ThreadPolicy(threads, adaptive=config.adaptive_threads)
        session = Session(target.model, config.n_ctx, threads, thread_policy=policy)
        draft_session = (
            Session(draft.model, config.n_ctx, threads, thread_policy=policy) if draft else None
        )
        totals = Totals()
        self.local = LocalGenerator(
            target,
            draft,
            config,
            (session, draft_session),
            policy,
            totals,
            self._fingerprints,
        )
        super().__init__(self.local, totals)

    @classmethod
    def load(
        cls, config: EngineConfig, progress: ProgressCallback | None = None
    ) -> SpeculativeEngine:
        if progress:
            progress("loading the target model", 10)
        target = Model(resolve_path(config.target_model, provision.TARGET), config.n_gpu_layers)
        draft = None
        if config.use_draft:
            if progress:
                progress("loading the draft model", 60)
            draft = Model(resolve_path(config.draft_model, provision.DRAFT), config.n_gpu_layers)
            check_same_vocab(target, draft)
        engine = cls(target, draft, config)
        if target.n_gpu_layers == 0:
            if progress:
                progress("verify costs of this CPU (timed once per machine)", 80)
            engine.price_by_this_machine()
        if progress:
            progress("models ready", 100)
        return engine

    def target_fingerprint(self) -> str:
        """The target file's fingerprint (slots.model_fingerprint), read once: the
        KV slots and the verify curves both key by it."""
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.target.path)
        return self._fingerprint

    def _fingerprints(self) -> tuple[str, str | None]:
        draft = model_fingerprint(self.draft.path) if self.draft else None
        return self.target_fingerprint(), draft

    def price_by_this_machine(self) -> None:
        """Price drafts by this CPU's own verify curves (speculator/verify_curve.py),
        measured once and kept beside the models."""
        store = CurveStore(provision.beside_models("verify-curves"))
        try:
            fingerprint = self.target_fingerprint()
        except OSError as exc:
            log.warning("the verify curve is not measured (the tabled one is used): %s", exc)
            return
        shapes = machine_shapes(
            self.session, self.thread_policy, self.target.tokenize, fingerprint, store
        )
        for controller in self.controllers.values():
            controller.price_by_measured(shapes, self.thread_policy.max_threads)

    def close(self) -> None:
        super().close()  # the generator: its slot writer, then its sessions
        self.target.close()
        if self.draft is not None:
            self.draft.close()

    # -- what the bench and the model tests read of the local generator ----------------

    @property
    def session(self) -> Session:
        return self.local.session

    @property
    def draft_session(self) -> Session | None:
        return self.local.draft_session

    @property
    def thread_policy(self) -> ThreadPolicy:
        return self.local.thread_policy

    @property
    def controllers(self) -> dict[str, Controller]:
        return self.local.controllers

    @property
    def ram_slots(self) -> RamSlots:
        return self.local.slots.ram

    @property
    def disk_slots(self) -> DiskSlots | None:
        return self.local.slots.disk

    @property
    def shift_reuse(self) -> bool:
        return self.local.shift_reuse

    @shift_reuse.setter
    def shift_reuse(self, value: bool) -> None:
        self.local.shift_reuse = value

    @property
    def last_outcome(self) -> DecodeOutcome | None:
        return self.local.last_outcome
