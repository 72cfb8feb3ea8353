"""The one compiled module, memory.embeddings._kernels: the rest of the project is in pyproject.toml.

It is optional, as MarkupSafe's speedups are: where it cannot be built (no C compiler), the
install goes on without it and the vector index runs the same steps in numpy.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "memory.embeddings._kernels",
            ["memory/embeddings/_kernels.c"],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]
)
