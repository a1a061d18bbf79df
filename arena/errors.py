"""Requests the arena turns down. ``str(exc)`` is the message shown to the voter and
``status`` the HTTP status the API answers with; nothing refused is stored."""


class Refused(Exception):
    status = 400


class RateLimited(Refused):
    status = 429


class UnknownBattle(Refused):
    status = 404


class AlreadyVoted(Refused):
    status = 409


class NotReady(Refused):
    status = 409


class ModelFailed(Refused):
    """A model's server died or broke off mid-answer: the battle cannot be voted on."""

    status = 502

    def __init__(self, message: str, battle_id: str):
        super().__init__(message)
        self.battle_id = battle_id
