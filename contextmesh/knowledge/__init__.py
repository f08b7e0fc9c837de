"""Knowledge from a person's own documents: a folder of Markdown and plain text read into a corpus.

The modules here read untrusted files and nothing else: bytes in, a :class:`contextmesh.knowledge.corpus.Corpus`
out, with a list of warnings a caller can print. They write no graph and keep no state; the build
pipeline (:mod:`contextmesh.knowledge.pipeline`) turns the corpus into a graph.

* :mod:`~contextmesh.knowledge.decoding` — the byte-level rules (size, UTF-8, control characters,
  line length) every document passes before it is parsed;
* :mod:`~contextmesh.knowledge.front_matter` — the strict ``---`` header (``title``, ``origin``,
  ``date``);
* :mod:`~contextmesh.knowledge.blocks` and :mod:`~contextmesh.knowledge.inline` — the Markdown a
  real document uses, reduced to blocks of plain text and the links in them;
* :mod:`~contextmesh.knowledge.sentences` — the sentence splitter;
* :mod:`~contextmesh.knowledge.documents` — one file into one source with a span per sentence and
  content-derived span keys;
* :mod:`~contextmesh.knowledge.links` — links between documents resolved into relations;
* :mod:`~contextmesh.knowledge.acronyms`, :mod:`~contextmesh.knowledge.discovery`,
  :mod:`~contextmesh.knowledge.candidates` and :mod:`~contextmesh.knowledge.entities_file` — entity
  candidates, their fold into the corpus's entities, and the person-edited entities file;
* :mod:`~contextmesh.knowledge.folder` — ``read_folder``, which ties them together.

The format these modules accept is ``docs/formats/documents.md``.
"""
