"""An OpenAI-compatible embeddings endpoint as the embedder (EMBEDDER=openai).

POSTs `{"model", "input": [...]}` to `EMBEDDINGS_URL` + `/embeddings` with the API key as a
bearer token, the way OpenAI, Azure OpenAI, vLLM, Ollama and llama.cpp's server all accept it.
Vectors are normalised here, so any such model compares by cosine like the local one. A single
text (a query's, which an agent's call waits on) waits at most QUERY_TIMEOUT_SECONDS for the
answer, a batch TIMEOUT_SECONDS.
"""

from __future__ import annotations

import numpy as np

BATCH = 128
# A batch of the consolidator's may take long; a query's text is waited on by an agent's call.
TIMEOUT_SECONDS = 30.0
QUERY_TIMEOUT_SECONDS = 3.0


class RemoteEmbedder:
    def __init__(self, *, url: str, model: str, api_key: str = "") -> None:
        self.name = f"openai:{model}"
        self._url = url.rstrip("/") + "/embeddings"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def embed(self, texts: list[str]) -> np.ndarray:
        # Imported here: `httpx` brings its command line's `rich` and `pygments` along (3 MB in
        # every serving process), and only this embedder, when configured, uses it.
        import httpx  # noqa: PLC0415

        rows: list[list[float]] = []
        timeout = QUERY_TIMEOUT_SECONDS if len(texts) == 1 else TIMEOUT_SECONDS
        with httpx.Client(timeout=timeout, headers=self._headers) as client:
            for start in range(0, len(texts), BATCH):
                batch = texts[start : start + BATCH]
                response = client.post(self._url, json={"model": self._model, "input": batch})
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda d: d["index"])
                rows += [d["embedding"] for d in data]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit: np.ndarray = vectors / np.maximum(norms, 1e-12)
        return unit
