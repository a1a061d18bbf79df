"""Drive a served Gradio page over HTTP as its browser code does (queue/join, then the
event stream), so tests can act as a scripted or hostile client against the real app."""

from __future__ import annotations

import json
import secrets

import httpx


class GradioPage:
    def __init__(self, client: httpx.Client, path: str = "/"):
        self.client, self.base = client, path.rstrip("/")
        config = client.get(f"{self.base}/config").json()
        ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
        self.handlers = {ids.get(target): dep["id"] for dep in config["dependencies"]
                         for target, event in dep["targets"] if event in ("click", "submit")}
        self.outputs = {dep["id"]: [ids.get(o) for o in dep["outputs"]] for dep in config["dependencies"]}
        self.session_hash = secrets.token_hex(6)

    def join(self, elem_id: str, data: list | None = None) -> httpx.Response:
        fn = self.handlers[elem_id]
        return self.client.post(f"{self.base}/gradio_api/queue/join", json={
            "data": data or [], "event_data": None, "fn_index": fn, "trigger_id": None,
            "session_hash": self.session_hash})

    def click(self, elem_id: str, data: list | None = None, timeout: float = 120) -> list[dict]:
        """Every message of the event, up to its ``process_completed``; the text as sent."""
        joined = self.join(elem_id, data)
        joined.raise_for_status()
        event_id = joined.json()["event_id"]
        messages = []
        with self.client.stream("GET", f"{self.base}/gradio_api/queue/data",
                                params={"session_hash": self.session_hash}, timeout=timeout) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") not in (event_id, None):
                    continue
                messages.append(message)
                if message.get("msg") == "process_completed":
                    break
        return messages

    def outputs_of(self, elem_id: str, messages: list[dict]) -> dict[str, object]:
        """The last value each output component got, by elem_id (updates as sent)."""
        names = self.outputs[self.handlers[elem_id]]
        values: dict[str, object] = {}
        for message in messages:
            data = (message.get("output") or {}).get("data")
            if not data:
                continue
            for name, value in zip(names, data):
                values[name] = value
        return values
