"""Dashboard forms: they parse and validate input; the services decide."""

from __future__ import annotations

from django import forms

from knowledge.models import (
    DECISION_REASON_MAX,
    RATIONALE_MAX,
    RULE_MAX,
    SOURCE_MAX,
    TAG_MAX,
    TRIGGER_MAX,
    KnowledgeType,
)
from knowledge.services.peer import FACT_KEY_MAX, FACT_VALUE_MAX
from knowledge.services.teach import TEACHABLE

TYPE_CHOICES = [("", "any type"), *KnowledgeType.choices]
STATE_CHOICES = [("live", "live"), ("superseded", "superseded"), ("deleted", "deleted"), ("all", "all")]
DECAY_CHOICES = [("", "any"), ("live", "fresh (≥ 0.5)"), ("fading", "fading"), ("decayed", "decayed out")]
TEXT = {"rows": 3, "cols": 60}


class KnowledgeSearchForm(forms.Form):
    q = forms.CharField(label="Search", required=False, max_length=500,
                        help_text="Ranked by the retrieval engine; each hit says why it ranks.")
    type = forms.ChoiceField(choices=TYPE_CHOICES, required=False)
    tag = forms.CharField(required=False, max_length=TAG_MAX)
    min_confidence = forms.FloatField(label="Confidence at least", required=False, min_value=0, max_value=1)
    decay = forms.ChoiceField(choices=DECAY_CHOICES, required=False)
    source = forms.CharField(required=False, max_length=SOURCE_MAX)
    state = forms.ChoiceField(choices=STATE_CHOICES, required=False)


def _tags(value: str) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()]


class TeachForm(forms.Form):
    rule = forms.CharField(widget=forms.Textarea(attrs=TEXT), max_length=RULE_MAX)
    type = forms.ChoiceField(choices=[(t, t.replace("_", " ")) for t in TEACHABLE], initial="heuristic")
    trigger = forms.CharField(required=False, max_length=TRIGGER_MAX, help_text="When does this apply?")
    rationale = forms.CharField(required=False, widget=forms.Textarea(attrs=TEXT), max_length=RATIONALE_MAX)
    tags = forms.CharField(required=False, help_text="Comma-separated. Action items need action-item and for:<email>.")

    def tag_list(self) -> list[str]:
        return _tags(self.cleaned_data["tags"])


class EditForm(forms.Form):
    content = forms.CharField(label="Rule", widget=forms.Textarea(attrs=TEXT), max_length=RULE_MAX)
    trigger = forms.CharField(required=False, max_length=TRIGGER_MAX)
    rationale = forms.CharField(required=False, widget=forms.Textarea(attrs=TEXT), max_length=RATIONALE_MAX)
    type = forms.ChoiceField(choices=KnowledgeType.choices)
    tags = forms.CharField(required=False, help_text="Comma-separated.")
    confidence = forms.FloatField(min_value=0, max_value=1)

    def tag_list(self) -> list[str]:
        return _tags(self.cleaned_data["tags"])


class SupersedeForm(forms.Form):
    content = forms.CharField(label="New rule", widget=forms.Textarea(attrs=TEXT), max_length=RULE_MAX,
                              help_text="Replaces this row; the old one stays in the chain, out of retrieval.")
    trigger = forms.CharField(required=False, max_length=TRIGGER_MAX)
    rationale = forms.CharField(required=False, widget=forms.Textarea(attrs=TEXT), max_length=RATIONALE_MAX)


class RejectForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 60}), max_length=DECISION_REASON_MAX,
                             help_text="Why not? It is kept with the proposal.")


class OracleForm(forms.Form):
    question = forms.CharField(widget=forms.Textarea(attrs={"rows": 2, "cols": 60}), min_length=3, max_length=2000)


class PeerCardForm(forms.Form):
    facts = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 10, "cols": 60}),
        help_text="One fact per line as key: value (e.g. editor: neovim). An empty value removes the fact.",
    )

    def clean_facts(self) -> str:
        """Every non-blank line is `key: value` within the limits; each one that is not is named (they were
        dropped or cut without a word, and the page said "saved")."""
        text: str = self.cleaned_data["facts"]
        problems = [f"line {n}: {problem}" for n, line in enumerate(text.splitlines(), start=1)
                    if line.strip() and (problem := _fact_problem(line))]
        if problems:
            raise forms.ValidationError("; ".join(problems))
        return text

    def fact_dict(self) -> dict[str, str]:
        facts: dict[str, str] = {}
        for line in self.cleaned_data["facts"].splitlines():
            if ":" in line:
                key, value = line.split(":", 1)
                facts[key.strip()] = value.strip()
        return facts


def _fact_problem(line: str) -> str:
    key, colon, value = line.partition(":")
    if not colon or not key.strip():
        return "write it as key: value"
    if len(key.strip()) > FACT_KEY_MAX:
        return f"the key is {len(key.strip())} characters; at most {FACT_KEY_MAX}"
    if len(value.strip()) > FACT_VALUE_MAX:
        return f"the value is {len(value.strip())} characters; at most {FACT_VALUE_MAX}"
    return ""
