"""Model backends behind one interface (see ``base.Model``); pick one with ``pairlab.models.get_model``."""

from pairlab.backends.base import BackendError, Completion, GenerationParams, Message, Messages, Model, Prompt

__all__ = ["BackendError", "Completion", "GenerationParams", "Message", "Messages", "Model", "Prompt"]
