"""The rules that tie the documentation's commands to a test
(tests/doc_examples.py); the commands themselves run in
tests/functional/test_doc_examples.py."""
from tests import doc_examples


def test_every_command_shown_is_marked():
    """A ``$`` line outside a marked console block would go unchecked."""
    problems = []
    for path in doc_examples.sources():
        problems += doc_examples.parse(path)[1]
    assert not problems, "\n".join(problems)



def _parse(monkeypatch, tmp_path, text):
    monkeypatch.setattr(doc_examples, "ROOT", tmp_path)
    path = tmp_path / "page.rst"
    path.write_text(text)
    return doc_examples.parse(path)


def test_a_marked_block_gives_its_commands_and_their_output(
        monkeypatch, tmp_path):
    examples, problems = _parse(monkeypatch, tmp_path, """\
Text.

.. doc-example: run

.. code-block:: console

    $ scheduler-manage db \\
        version
    0010

    $ scheduler-client ping
    ok
""")
    assert problems == []
    [example] = examples
    assert example.mode == "run"
    assert [(c.line, c.text, c.output) for c in example.commands] == [
        (7, "scheduler-manage db version", ["0010", ""]),
        (11, "scheduler-client ping", ["ok"])]


def test_a_command_outside_a_marked_block_is_a_problem(monkeypatch,
                                                       tmp_path):
    _, problems = _parse(monkeypatch, tmp_path, """\
Run this::

    $ scheduler-client ping

.. code-block:: console

    $ scheduler-client ping

.. doc-example: skip

.. code-block:: console

    $ tools/demo
""")
    assert problems == [
        "page.rst:3: a command shown outside a '.. doc-example:' console "
        "block",
        "page.rst:7: a command shown outside a '.. doc-example:' console "
        "block",
        "page.rst:9: skip needs a reason"]


def test_output_that_differs_only_where_the_docs_let_it():
    shown = ["uuid                                  host",
             "------------------------------------  ----",
             "5b0f4a52-4d3c-4a9e-9a57-1f0e3c2b7d10  c1",
             "registered in ...s",
             "..."]
    printed = ["uuid  host",
               "----  ----",
               "0b3325bf-98b3-5733-afb6-308ec35520c6  c1",
               "registered in 0.01s",
               "more", "lines"]
    assert doc_examples.matches(shown, printed)
    assert not doc_examples.matches(shown[:3], printed[:2] + ["x c1"])
    assert not doc_examples.matches(["c1"], ["c2"])
    assert not doc_examples.matches(["c1"], ["c1", "extra"])


def test_a_command_in_a_block_of_another_language_is_a_problem(
        monkeypatch, tmp_path):
    _, problems = _parse(monkeypatch, tmp_path, """\
.. doc-example: run

.. code-block:: bash

    $ scheduler-client ping
""")
    assert "page.rst:5: a command shown outside a '.. doc-example:' " \
        "console block" in problems
