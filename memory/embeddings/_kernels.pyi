"""The compiled loops of the vector index (_kernels.c); see memory.embeddings.index."""

import numpy as np

def popcounts() -> tuple[str, ...]: ...
def popcount() -> str: ...
def use_popcount(name: str) -> None: ...
def nearest_rows(
    signs: np.ndarray,
    query: np.ndarray,
    floor: np.ndarray,
    count: int,
    values: int,
    distance: np.ndarray,
    out: np.ndarray,
) -> int: ...
def scores(
    codes: np.ndarray, rows: np.ndarray, query: np.ndarray, scales: np.ndarray, out: np.ndarray
) -> None: ...
