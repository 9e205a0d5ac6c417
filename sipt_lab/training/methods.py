"""Pre-training methods side by side: name -> a recipe of objectives and batch construction.

Every method runs through the one trainer (:func:`sipt_lab.training.pretrain`, ``method=``) on the
same seeds, batches of the same size and the same step budget:

=========== ================================================================ =================
name        recipe                                                           Theorem 1 covers
=========== ================================================================ =================
lm          ``L_M`` (λ_SI = 0)                                                no (intra-sample)
sipt        ``(1 − λ)·L_M + λ·L_SI`` (``--loss contrastive|multisim|infonce``) yes
linkbert    ``L_MLM + L_DRP`` on ``[CLS] A [SEP] B [SEP]`` pairs (80/10/10)      partly (linked pairs)
mlsm        KL to a teacher's sparse concept codes at 15 % ``[MASK]``-ed tokens  no (intra-sample)
lsm15       the same at 15 % of the tokens, left visible                      no
lsm         the same at every token, left visible                             no
multitask   ``(1 − λ)·L_M + λ·`` multi-label BCE of each sample's labels        no (per-sample labels)
same-family ``(1 − λ)·L_M + λ·`` BCE of "shares a label" on balanced pairs     no (per-sample labels)
=========== ================================================================ =================

LinkBERT's per-sample embedding is, like every method's, ``[CLS]`` of the sample alone (segment 0).
The MLSM family needs a teacher: an LM-trained encoder with the same tokenizer (``simulate`` and
domain runs use the ``lm`` arm of the same seed, ``pretrain`` a ``--teacher`` directory); it runs
on the char encoder and on Hugging Face checkpoints. The student starts from the teacher's weights,
and ``pretrain`` ends with MLSM's final phase (:mod:`~sipt_lab.training.concept_student`), saving
an ordinary MLM encoder. Their settings are :class:`ConceptOptions`.
The per-sample baselines (:mod:`sipt_lab.training.per_sample`) need each sample's pre-training
labels (``TrainConfig.pt_labels``, given to :func:`method_recipe` as :class:`SampleLabels`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from torch import nn

from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.models import CharInit, CheckpointInit, EncoderSource, Tokenizer
from sipt_lab.objectives import MaskedLM
from sipt_lab.objectives.concepts import ConceptKL, concept_targets, learn_dictionary, teacher_states
from sipt_lab.objectives.relation import DocumentRelation
from sipt_lab.training import names
from sipt_lab.training.concept_student import copy_teacher, final_phase
from sipt_lab.training.per_sample import MultiTaskRecipe, SameFamilyRecipe, SampleLabels
from sipt_lab.training.recipe import Plan, Recipe, RunData, checkpoint_config, graph_sampler, hidden_size
from sipt_lab.training.segment_pairs import RELATIONS, SegmentPairSampler, relation_accuracy
from sipt_lab.training.train_config import TrainConfig

#: How an MLSM student starts: from its teacher's weights, or at random.
STUDENT_INITS = ("teacher", "random")


@dataclass(frozen=True)
class ConceptOptions:
    """MLSM / LSM settings.

    Attributes:
        layer: the teacher layer whose states are coded (0 = embeddings, None = the last, as
            MLSM's ``train_dict.py`` defaults to).
        atoms_per_hidden: dictionary atoms per hidden unit, ``k = atoms_per_hidden × H`` (MLSM's
            3,000 atoms for BERT's 768 is ~4; 2 keeps the per-token sparse coding cheap on a CPU).
        sparsity: the L1 weight ``λ`` of dictionary learning and coding (MLSM: 0.05); 0.05 gives
            a median of ~9 non-zero codes per token on the char encoder's states (reported per run).
        mlm_weight: weight of an extra MLM term (MLSM's ``--mlm_weight``, default 0).
        student_init: ``teacher`` (the paper's default: the student starts from the teacher's
            weights, :func:`~sipt_lab.training.concept_student.copy_teacher`) or ``random``.
    """

    layer: int | None = None
    atoms_per_hidden: int = 2
    sparsity: float = 0.05
    mlm_weight: float = 0.0
    student_init: str = "teacher"

    def __post_init__(self) -> None:
        if self.layer is not None and self.layer < 0:
            raise ConfigError("ConceptOptions.layer", f"must be >= 0 or None (the last), got {self.layer}")
        if self.atoms_per_hidden < 1:
            raise ConfigError("ConceptOptions.atoms_per_hidden", f"must be >= 1, got {self.atoms_per_hidden}")
        if self.sparsity <= 0:
            raise ConfigError("ConceptOptions.sparsity", f"must be > 0, got {self.sparsity}")
        if self.mlm_weight < 0:
            raise ConfigError("ConceptOptions.mlm_weight", f"must be >= 0, got {self.mlm_weight}")
        if self.student_init not in STUDENT_INITS:
            raise ConfigError(
                "ConceptOptions.student_init", f"is {self.student_init!r}; choose one of {', '.join(STUDENT_INITS)}"
            )

    def check_layer(self, teacher_layers: int) -> None:
        """ConfigError when :attr:`layer` is beyond a teacher of ``teacher_layers`` transformer layers
        (checked when the run is set up, before any teacher trains)."""
        if self.layer is not None and self.layer > teacher_layers:
            raise ConfigError(
                "ConceptOptions.layer",
                f"is {self.layer} but the teacher has layers 0..{teacher_layers} "
                f"(0 = embeddings, {teacher_layers} = the last); choose one of those",
            )


@dataclass(frozen=True)
class Teacher:
    """An LM-trained encoder and its tokenizer; ``cache`` keeps the concept targets computed from it
    (the three MLSM variants of one seed share them)."""

    encoder: nn.Module
    tokenizer: Tokenizer
    cache: dict = field(default_factory=dict, compare=False)


def _char_source(source: EncoderSource, method: str) -> CharInit:
    if not isinstance(source, CharInit):
        raise SiptError(
            f"method {method} runs on the character encoder (PretrainJob.init char); a Hugging Face init is not supported for it yet"
        )
    return source


def _vocabulary(tokenizer: Tokenizer) -> dict:
    """What a teacher must share with the run to read its token ids: the tokenizer less its length."""
    return {key: value for key, value in tokenizer.to_dict().items() if key != "max_len"}


@dataclass(frozen=True)
class LinkBertRecipe:
    """LinkBERT: segment pairs with token types, ``L_MLM + L_DRP`` (1:1). The char encoder gains
    segment embeddings and its tokenizer ``[SEP]``; a Hugging Face checkpoint brings both (it
    needs ``type_vocab_size >= 2``, as BERT-style models have)."""

    def encoder_source(self, source: EncoderSource) -> EncoderSource:
        if isinstance(source, CheckpointInit):
            if int(checkpoint_config(source).get("type_vocab_size", 0)) < 2:
                raise SiptError(
                    f"{source.path} has fewer than 2 token types (e.g. RoBERTa); linkbert needs a BERT-style checkpoint or PretrainJob.init char"
                )
            return source
        char = _char_source(source, "linkbert")
        return dataclasses.replace(char, config=dataclasses.replace(char.config, token_types=2))

    def plan(self, data: RunData) -> Plan:
        config = data.config
        sampler = self.plan_sampler(data.texts, data.graph, data.tokenizer, config)
        return Plan(sampler, [(1.0, MaskedLM()), (1.0, DocumentRelation(hidden_size(data.source), config.seed))])

    def plan_sampler(self, texts: list[str], graph, tokenizer, config: TrainConfig) -> SegmentPairSampler:
        """The run's pair sampler (to score the relation head on steps it never trained on)."""
        return SegmentPairSampler(
            graph, texts, tokenizer, config.batch_size, config.mask_prob, config.seed, config.mask_replacement
        )

    def describe(self) -> dict:
        return {"recipe": "linkbert", "relations": list(RELATIONS)}


@dataclass(frozen=True)
class ConceptOutputs:
    """An encoder whose tied decoder also scores ``n_concepts`` concept outputs (MLSM's ``[MASK-j]``
    rows, the decoder's last ``n_concepts``); the tokenizer is unchanged. A character encoder is
    built with them; a Hugging Face checkpoint is loaded and its input embeddings and tied decoder
    grow by ``n_concepts`` fresh rows (:meth:`~sipt_lab.models.HFEncoder.add_output_rows`). With a
    ``teacher``, the weights then become the teacher's where they match (:func:`copy_teacher`)."""

    base: CharInit | CheckpointInit
    n_concepts: int
    teacher: nn.Module | None = field(default=None, compare=False)

    def tokenizer(self, texts: list[str], max_len: int | None) -> Tokenizer:
        return self.base.tokenizer(texts, max_len)

    def encoder(self, tokenizer: Tokenizer) -> tuple[nn.Module, list[str]]:
        note = f"{self.n_concepts} concept outputs after the {tokenizer.vocab_size}-token vocabulary"
        if isinstance(self.base, CharInit):
            config = dataclasses.replace(self.base.config, vocab_size=tokenizer.vocab_size + self.n_concepts)
            encoder, notes = self.base.build(config), []
        else:
            encoder, notes = self.base.encoder(tokenizer)
            encoder.add_output_rows(self.n_concepts)
        notes.append(note)
        if self.teacher is not None:
            notes.append(copy_teacher(encoder, self.teacher))
        return encoder, notes

    def describe(self) -> dict:
        return {**self.base.describe(), "concept_outputs": self.n_concepts}

    @property
    def normalizes(self) -> bool:
        return self.base.normalizes


@dataclass(frozen=True)
class ConceptRecipe:
    """MLSM / LSM: KL to the teacher's concept codes at the sampler's selected tokens."""

    teacher: Teacher
    options: ConceptOptions

    def encoder_source(self, source: EncoderSource) -> EncoderSource:
        if not isinstance(source, (CharInit, CheckpointInit)):
            raise SiptError(
                "method mlsm runs on a text encoder (PretrainJob.init char, minilm or a Hugging Face directory)"
            )
        teacher = self.teacher.encoder if self.options.student_init == "teacher" else None
        return ConceptOutputs(source, self.options.atoms_per_hidden * hidden_size(source), teacher)

    def plan(self, data: RunData) -> Plan:
        if _vocabulary(data.tokenizer) != _vocabulary(self.teacher.tokenizer):
            raise SiptError(
                "the teacher's tokenizer differs from the run's; MLSM needs a teacher trained on the same samples with the same tokenizer"
            )
        targets = self.targets(data)
        objectives = [(1.0, ConceptKL(targets))]
        if self.options.mlm_weight > 0:
            objectives.append((self.options.mlm_weight, MaskedLM(data.tokenizer.vocab_size)))
        return Plan(graph_sampler(data, objectives), objectives)

    def targets(self, data: RunData):
        """The concept targets of ``data``'s tokens (computed once per teacher and settings)."""
        key = (self.options, data.ids.shape, int(data.lengths.sum()), data.config.seed)
        if key not in self.teacher.cache:
            states = teacher_states(self.teacher.encoder, data.ids, data.lengths, self.options.layer)
            n_atoms = self.options.atoms_per_hidden * hidden_size(data.source)
            dictionary = learn_dictionary(states, n_atoms, self.options.sparsity, seed=data.config.seed)
            self.teacher.cache[key] = concept_targets(states, data.lengths, dictionary, self.options.sparsity)
        return self.teacher.cache[key]

    def describe(self) -> dict:
        return {"recipe": "concepts", **dataclasses.asdict(self.options)}


@dataclass(frozen=True)
class Method:
    """A named pre-training method.

    Attributes:
        name: a name in :data:`names.METHODS`; summary: one line for listings. The TrainConfig
            fields it fixes (its masking, λ_SI) are its row of
            :data:`~sipt_lab.training.defaults.METHOD_SETTINGS`.
        recipe: ``(teacher, ConceptOptions, SampleLabels) -> Recipe`` (None: LM / SIPT by the
            config's ``lambda_si``).
        structure_aware: it induces ``G_PT`` structure in the per-sample space (Theorem 1's premise).
        needs_teacher: it learns from an LM-trained teacher.
        needs_labels: it learns from per-sample pre-training labels (``TrainConfig.pt_labels``),
            weighted by ``lambda_si``.
        final_phase: ``(encoder, tokenizer, texts, seed) -> report``, run in place on the trained
            encoder before ``pretrain`` saves it (MLSM's concept -> vocabulary layer); None: none.
    """

    name: str
    summary: str
    recipe: Callable[[Teacher | None, ConceptOptions, SampleLabels | None], Recipe] | None = None
    structure_aware: bool = False
    needs_teacher: bool = False
    needs_labels: bool = False
    final_phase: Callable[[nn.Module, Tokenizer, list[str], int], dict] | None = None


def _concepts(teacher: Teacher | None, options: ConceptOptions, labels: SampleLabels | None) -> Recipe:
    if teacher is None:
        raise SiptError(
            "MLSM / LSM need a teacher: an LM-trained encoder (simulate trains the lm arm; pretrain takes PretrainJob.teacher DIR)"
        )
    return ConceptRecipe(teacher, options)


def _per_sample(recipe: type) -> Callable[[Teacher | None, ConceptOptions, SampleLabels | None], Recipe]:
    """The factory of a per-sample baseline's ``recipe``, which refuses a run without labels."""

    def build(teacher: Teacher | None, options: ConceptOptions, labels: SampleLabels | None) -> Recipe:
        if labels is None:
            raise SiptError(
                "the per-sample baselines (multitask, same-family) need per-sample pre-training labels; "
                "set TrainConfig.pt_labels to a file of id<TAB>label;label lines"
            )
        return recipe(labels)

    return build


#: The methods, by name (:data:`names.METHODS`).
METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        Method("lm", "masked language modelling alone (λ_SI = 0)"),
        Method("sipt", "L_M + λ·L_SI over G_PT", structure_aware=True),
        Method(
            "linkbert",
            "LinkBERT: MLM (80/10/10) + document relation prediction on linked segment pairs",
            lambda teacher, options, labels: LinkBertRecipe(),
            structure_aware=True,
        ),
        Method(
            "mlsm",
            "MLSM: KL to a teacher's sparse concept codes at 15 % masked tokens",
            _concepts,
            needs_teacher=True,
            final_phase=final_phase,
        ),
        Method(
            "lsm15",
            "LSM15: concept codes at 15 % of the tokens, nothing masked",
            _concepts,
            needs_teacher=True,
            final_phase=final_phase,
        ),
        Method(
            "lsm",
            "LSM: concept codes at every token, nothing masked",
            _concepts,
            needs_teacher=True,
            final_phase=final_phase,
        ),
        Method(
            "multitask",
            "Hu et al.'s multi-task baseline: L_M + λ·multi-label classification of each sample's labels",
            _per_sample(MultiTaskRecipe),
            needs_labels=True,
        ),
        Method(
            "same-family",
            "PLUS's same-family baseline: L_M + λ·whether two samples share a label, on balanced pairs",
            _per_sample(SameFamilyRecipe),
            needs_labels=True,
        ),
    )
}
assert tuple(METHODS) == names.METHODS


def get_method(name: str) -> Method:
    """The method called ``name``; SiptError naming the choices otherwise."""
    if name not in METHODS:
        raise SiptError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
    return METHODS[name]


def method_recipe(
    name: str,
    teacher: Teacher | None = None,
    options: ConceptOptions = ConceptOptions(),
    labels: SampleLabels | None = None,
) -> Recipe | None:
    """The recipe :func:`~sipt_lab.training.pretrain` takes as ``method`` (None for lm / sipt);
    ``labels`` are the run's per-sample pre-training labels (the per-sample baselines')."""
    method = get_method(name)
    return None if method.recipe is None else method.recipe(teacher, options, labels)


__all__ = [
    "METHODS",
    "STUDENT_INITS",
    "ConceptOptions",
    "ConceptRecipe",
    "LinkBertRecipe",
    "Method",
    "SampleLabels",
    "Teacher",
    "get_method",
    "method_recipe",
    "relation_accuracy",
]
