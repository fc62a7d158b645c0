"""``kraft zoo``: every named bug variant of every protocol through all four checks, side by side.

For each variant declared in ``kraft/<protocol>/protocol.py`` (and for each protocol without a
variant, the control row) the zoo runs:

  tlc         TLC on the spec variant          ``kraft check SPEC --variant V`` (counterexample steps)
  hypothesis  the Hypothesis machine on the    a pytest subprocess over the protocol's stateful test
              implementation variant           file with the zoo's pytest plug-in (example steps)
  conform     the variant's simulated traces   ``kraft simulate --variant V`` then ``kraft conform``
              against the CORRECT spec         per protocol (the first rejected trace line)
  audit       the variant's client histories   one ``kraft audit`` over every variant's histories
                                               (the smallest invalid history's ops)

A cell is ``caught``, ``missed``, ``not observable`` (declared next to the variant, with why:
``Variant.unobservable``), ``not available`` (the check does not exist for this protocol yet, e.g.
no conformance glue), ``inconclusive`` (the budget ran out, or nothing could be decided) or
``error`` (a tool failed). Control cells are ``clean`` or ``fired``.

Exit code (kraft/outcome.py): 1 if a control cell fired or a variant was missed by every check
that could observe it; else 2 if a tool failed; else 3 if the budget ran out before every cell was
decided (or a variant or control cell stayed undecided); else 0.

Work is a list of tasks (the simulate -> conform -> audit chain, each TLC run, one Hypothesis run
per protocol) taken in order by two workers, since the machine has two cores (TLC runs with one
worker); with ``--master`` each task, the chain split per row, is a Spark task. ``--budget`` is
one deadline for all of it: every subprocess is stopped at it, the simulation seeds and
Hypothesis examples are scaled down when the budget is small, and cells not reached are
inconclusive. ``--reuse-tlc`` takes TLC cells from earlier ``kraft check`` outputs
(``kraft review`` passes its own model-check and ``--all-variants`` results).

JSON (``OUT/zoo.json``, the shared header first): ``checks`` (id, title, unit), ``rows`` (one per
protocol and variant, the control row first, ``variant: null``), each with ``outcome``,
``caught_by`` and ``cells[check]`` = ``{status, seconds, size, unit, detail, evidence, budget}``.

The modules, one job each:

  plan.py           what runs: the protocols, rows and tasks from the declarations, the sizes the
                    budget allows, the deadline, and the stateful test file of each protocol
                    (``HYPOTHESIS_FILES``)
  run.py            running the tasks with the workers; state.py: the rows they fill in;
                    process.py: the subprocesses, stopped at the deadline or with the zoo
  cluster.py, remote.py
                    ``--master``: the tasks (the chain split per row) as Spark tasks, and one
                    task as an executor runs it and sends its cells back
  tlc.py, stateful.py (Hypothesis), simulate.py, conform.py, audit.py
                    each check's runs and the cells judged from their outputs
  config.py, pytest_plugin.py
                    the Hypothesis run's pytest plug-in and the config file the zoo hands it
                    (``pytest -p kraft.review.zoo.pytest_plugin --zoo-config FILE``)
  verdict.py        cells, rows, the zoo's verdict; matrix.py: the matrix and zoo.json
  command.py        the ``kraft zoo`` command
"""
