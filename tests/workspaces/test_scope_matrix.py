"""The scoping matrix: what every kind of agent credential may see and propose, case by case.

Every combination of role x granted data classes x project list x project data class x tenant
is checked against the rule written out in plain Python below (`expected_*`, which never calls
AgentScope), through each way an agent reaches memory: the catalogue (`project_catalogue`),
project resolution (`project_for_agent`), the item queryset (`agent_facts`), search with its
cursors (`search_for_agent`), proposing (`proposal_submit`) and the consolidator's second look
under the credential's authority as it is when it decides. No server and no HTTP: the MCP tools
are thin over these functions and have their own tests on the wire.

The world (two workspaces, their projects and items, one credential per authority) is built once
for the module in a transaction that is rolled back when the module ends; each case runs in a
savepoint of it, so a case's writes never reach the next one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import combinations, product
from typing import Any, cast

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection as db_connection
from django.db import transaction
from django.test import override_settings

from memory.cursors import cursor_make
from memory.models import Fact, Proposal
from memory.selectors import agent_facts, project_for_context, search_for_agent
from memory.services import fact_create, proposal_consolidate, proposal_submit, workspace_open
from tests.factories import UserFactory
from workspaces.exceptions import UnforgetterError, UnknownProject
from workspaces.models import Connection, Project, Workspace
from workspaces.scope import AgentScope
from workspaces.selectors import agent_scope, project_catalogue, project_for_agent
from workspaces.services import project_create, token_issue

pytestmark = pytest.mark.django_db

# --- the dimensions ----------------------------------------------------------------------------

ROLES = ("reader", "contributor")
GRANTABLE = ("public", "internal", "confidential")
# Every non-empty subset of the grantable classes, in rank order.
GRANTS = [subset for size in (1, 2, 3) for subset in combinations(GRANTABLE, size)]
# "all": every project of the granted classes; "listed": a list holding the project (and another);
# "unlisted": a list holding only another project.
LISTINGS = ("all", "listed", "unlisted")
PROJECT_CLASSES = ("public", "internal", "confidential", "restricted")
ITEM_CLASSES = PROJECT_CLASSES
TENANTS = ("own", "other")
WORD = "quokka"  # in every item's text, in every project


@dataclass(frozen=True)
class Case:
    """A credential of the `own` workspace asking about one project."""

    role: str
    granted: tuple[str, ...]
    listing: str
    project_class: str
    tenant: str

    def __str__(self) -> str:
        granted = "+".join(self.granted) or "nothing"
        return f"{self.role}-{granted}-{self.listing}-{self.project_class}_project-{self.tenant}"


CASES = [Case(*dims) for dims in product(ROLES, GRANTS, LISTINGS, PROJECT_CLASSES, TENANTS)]


# --- the rule, stated independently --------------------------------------------------------------


def expected_project_visible(case: Case) -> bool:
    """A project is visible when it is in the credential's own workspace, is not restricted, is of
    a granted class, and the credential has every project or a list holding this one."""
    return (
        case.tenant == "own"
        and case.project_class != "restricted"
        and case.project_class in case.granted
        and case.listing in ("all", "listed")
    )


def expected_resolution(case: Case) -> str:
    """Another tenant's project does not exist for the credential; one of its own is forbidden."""
    if case.tenant != "own":
        return "unknown_project"
    return "ok" if expected_project_visible(case) else "forbidden_scope"


def expected_item_visible(case: Case, item_class: str) -> bool:
    """An item is visible in a visible project when its own class is granted (restricted never)."""
    return expected_project_visible(case) and item_class != "restricted" and item_class in case.granted


def expected_submission(case: Case, target_class: str | None = None) -> str:
    """A reader never proposes; a contributor proposes in visible projects, to visible items."""
    if case.role != "contributor":
        return "forbidden_scope"
    resolution = expected_resolution(case)
    if resolution != "ok":
        return resolution
    if target_class is not None and not expected_item_visible(case, target_class):
        return "forbidden_scope"
    return "accepted"


def expected_decision(case: Case, target_class: str | None) -> tuple[str, str]:
    """The consolidator publishes what the credential may still write when it decides."""
    allowed = expected_project_visible(case) and (
        target_class is None or expected_item_visible(case, target_class)
    )
    return ("published", "") if allowed else ("rejected", "scope")


# --- the world ---------------------------------------------------------------------------------


@dataclass
class World:
    own: Workspace
    other: Workspace
    # (tenant, data class) -> the project; every project holds two items of every class.
    projects: dict[tuple[str, str], Project]
    # The `own` project every list holds besides (or instead of) the project under test.
    decoy: Project
    # (tenant, project class, item class) -> refs of that project's items of that class.
    items: dict[tuple[str, str, str], list[str]]
    # (role, granted, listing, listed project's (tenant, class) or None) -> credential.
    connections: dict[tuple[str, tuple[str, ...], str, tuple[str, str] | None], Connection]
    # A contributor of `own` granted everything, to present cursors that are not the case's.
    witness: Connection
    scopes: dict[int, AgentScope] = field(default_factory=dict)

    def project(self, case: Case) -> Project:
        return self.projects[(case.tenant, case.project_class)]

    def connection(self, case: Case) -> Connection:
        listed = (case.tenant, case.project_class) if case.listing == "listed" else None
        return self.connections[(case.role, case.granted, case.listing, listed)]

    def scope(self, case: Case) -> AgentScope:
        connection = self.connection(case)
        if connection.pk not in self.scopes:
            self.scopes[connection.pk] = agent_scope(connection)
        return self.scopes[connection.pk]

    def refs(self, case: Case, visible: Callable[[str], bool]) -> set[str]:
        return {
            ref
            for item_class in ITEM_CLASSES
            if visible(item_class)
            for ref in self.items[(case.tenant, case.project_class, item_class)]
        }


def _build() -> World:
    owner = cast(User, UserFactory(username="matrix-owner"))
    own = workspace_open(slug="matrix-own", name="Own", owner=owner)
    other = workspace_open(slug="matrix-other", name="Other", owner=owner)
    projects: dict[tuple[str, str], Project] = {}
    items: dict[tuple[str, str, str], list[str]] = {}
    for tenant, workspace in (("own", own), ("other", other)):
        for project_class in PROJECT_CLASSES:
            # Slugs differ across tenants: `other`'s projects are names `own` has never heard of.
            project = project_create(
                workspace=workspace, slug=f"{tenant}-{project_class}", data_class=project_class
            )
            projects[(tenant, project_class)] = project
            for item_class in ITEM_CLASSES:
                items[(tenant, project_class, item_class)] = [
                    fact_create(
                        project=project,
                        kind="fact",
                        text=f"The {WORD} ledger keeps {item_class} note {n} of {project.slug}.",
                        actor="owner",
                        data_class=item_class,
                    ).ref
                    for n in (1, 2)
                ]
    decoy = project_create(workspace=own, slug="own-decoy", data_class="public")
    fact_create(project=decoy, kind="fact", text=f"The {WORD} decoy note.", actor="owner")

    connections: dict[tuple[str, tuple[str, ...], str, tuple[str, str] | None], Connection] = {}

    def issue(
        key: tuple[str, tuple[str, ...], str, tuple[str, str] | None], projects: list[str] | None
    ) -> None:
        role, granted, _listing, _listed = key
        connections[key] = token_issue(
            workspace=own,
            actor=f"agent-{len(connections)}@matrix",
            zone="claude",
            role=role,
            data_classes=granted,
            projects=projects,
        ).connection

    for role, granted in product(ROLES, GRANTS):
        issue((role, granted, "all", None), None)
        issue((role, granted, "unlisted", None), [decoy.slug])
        for project_class in PROJECT_CLASSES:
            issue((role, granted, "listed", ("own", project_class)), [f"own-{project_class}", decoy.slug])
            # No service lists another tenant's project; the row is written by hand, so the
            # workspace check is shown to hold on its own, whatever a list says.
            theirs = (role, granted, "listed", ("other", project_class))
            issue(theirs, [decoy.slug])
            connections[theirs].projects.add(projects[("other", project_class)])
    witness = token_issue(
        workspace=own,
        actor="witness@matrix",
        zone="claude",
        role="contributor",
        data_classes=GRANTABLE,
    ).connection
    return World(own, other, projects, decoy, items, connections, witness)


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """Built once; each test's own transaction (pytest-django's) is a savepoint inside this one."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            built = _build()
            # Check the world's deferred foreign keys once, now: each test's teardown checks the
            # pending ones again, and on PostgreSQL those would be the whole world's, every time.
            db_connection.check_constraints()
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    yield built
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@contextmanager
def rolled_back() -> Iterator[None]:
    """A savepoint undone on the way out: one proposal's life, leaving the world as it was."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def outcome(call: Callable[[], object]) -> str:
    try:
        call()
    except UnforgetterError as error:
        return error.code
    return "ok"


def test_the_matrix_covers_every_combination() -> None:
    assert len(GRANTS) == 7
    assert len(CASES) == len(set(CASES)) == 2 * 7 * 3 * 4 * 2
    assert len({str(case) for case in CASES}) == len(CASES)


# --- reads -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_catalogue_lists_exactly_the_visible_projects(world: World, case: Case) -> None:
    listed = project_catalogue(world.scope(case)).filter(pk=world.project(case).pk).exists()
    assert listed == expected_project_visible(case), f"{case}: project_catalogue lists it: {listed}"


def _for_context(scope: AgentScope, slug: str) -> Project:
    return project_for_context(scope, slug).project


# get_context reads the project with its workspace's newest publication, in one statement.
RESOLVERS = {"project_for_agent": project_for_agent, "project_for_context": _for_context}


@pytest.mark.parametrize("resolver", RESOLVERS)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_project_resolution_resolves_forbids_or_does_not_know(
    world: World, case: Case, resolver: str
) -> None:
    scope, project, resolve = world.scope(case), world.project(case), RESOLVERS[resolver]
    got = outcome(lambda: resolve(scope, project.slug))
    assert got == expected_resolution(case), f"{case}: {resolver} gave {got}"
    if got == "ok":
        assert resolve(scope, project.slug) == project, f"{case}: resolved another project"
    if case.tenant == "other":
        with pytest.raises(UnknownProject) as refused:
            resolve(scope, project.slug)
        assert "matrix-other" not in refused.value.message, f"{case}: the refusal names the tenant"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agent_facts_serves_items_of_granted_classes_only(world: World, case: Case) -> None:
    scope, project = world.scope(case), world.project(case)
    if not expected_project_visible(case):
        # Reads start from a project resolved for the credential; any other is refused outright.
        with pytest.raises(AssertionError, match="project_for_agent"):
            agent_facts(scope, project)
        return
    got = set(agent_facts(scope, project).values_list("ref", flat=True))
    want = world.refs(case, lambda item_class: expected_item_visible(case, item_class))
    assert got == want, f"{case}: agent_facts served {sorted(got)}, the rule allows {sorted(want)}"


def _search_all_pages(scope: AgentScope, project: Project, query: str) -> tuple[list[str], list[str]]:
    """Every result ref, one per page, following cursors; and the cursors handed out."""
    refs: list[str] = []
    cursors: list[str] = []
    cursor: str | None = None
    while True:
        page = search_for_agent(scope=scope, project=project, query=query, cursor=cursor)
        refs.extend(result["ref"] for result in page["results"])
        cursor = page.get("cursor")
        if cursor is None:
            return refs, cursors
        cursors.append(cursor)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_search_finds_the_same_items_and_binds_its_cursors(world: World, case: Case) -> None:
    scope, project = world.scope(case), world.project(case)
    if not expected_project_visible(case):
        with pytest.raises(AssertionError, match="project_for_agent"):
            search_for_agent(scope=scope, project=project, query=WORD)
        return
    want = world.refs(case, lambda item_class: expected_item_visible(case, item_class))
    with override_settings(UNFORGETTER={**settings.UNFORGETTER, "SEARCH_PAGE_SIZE": 1}):
        refs, cursors = _search_all_pages(scope, project, WORD)
        assert sorted(refs) == sorted(want), f"{case}: search paged through {refs}, the rule allows {want}"
        # Every visible project holds at least two visible items: there is a next page.
        assert cursors, f"{case}: a page of one result out of {len(want)} handed out no cursor"
        witness = agent_scope(world.witness)
        theirs = search_for_agent(scope=witness, project=project, query=WORD)["cursor"]
        foreign = {
            "this credential's cursor, presented by another": (witness, cursors[0], WORD),
            "another credential's cursor for this project": (scope, theirs, WORD),
            "this credential's cursor for another project": (
                scope,
                cursor_make(scope=scope, project=world.decoy, query=WORD, offset=1),
                WORD,
            ),
            "this credential's cursor for another query": (scope, cursors[0], f"{WORD} ledger"),
        }
        for what, (presenter, cursor, query) in foreign.items():
            got = outcome(
                partial(search_for_agent, scope=presenter, project=project, query=query, cursor=cursor)
            )
            assert got == "invalid_cursor", f"{case}: {what} gave {got}"
    for item_class in ITEM_CLASSES:
        for ref in world.items[(case.tenant, case.project_class, item_class)]:
            found = [r["ref"] for r in search_for_agent(scope=scope, project=project, query=ref)["results"]]
            visible = expected_item_visible(case, item_class)
            assert found == ([ref] if visible else []), (
                f"{case}: a search for {item_class} {ref} gave {found}"
            )


# --- writes ------------------------------------------------------------------------------------


def _submit(scope: AgentScope, project: Project, target: str | None = None) -> Proposal:
    return proposal_submit(
        scope=scope,
        project_id=project.slug,
        request_id=f"matrix-{uuid.uuid4()}",
        op="update_fact" if target else "add_fact",
        text="Quokkas are weighed on Mondays, per the keeper's log.",
        target=target,
        evidence=[{"ref": "logs/keeper.txt", "trust": "trusted"}],
    ).proposal


@pytest.mark.parametrize("case", CASES, ids=str)
def test_proposal_submit_refuses_what_the_credential_may_not_write(world: World, case: Case) -> None:
    scope, project = world.scope(case), world.project(case)
    with rolled_back():
        got = outcome(lambda: _submit(scope, project))
    assert got.replace("ok", "accepted") == expected_submission(case), f"{case}: add_fact gave {got}"
    for item_class in ITEM_CLASSES:
        target = world.items[(case.tenant, case.project_class, item_class)][0]
        with rolled_back():
            got = outcome(partial(_submit, scope, project, target))
        want = expected_submission(case, item_class)
        assert got.replace("ok", "accepted") == want, f"{case}: update_fact of a {item_class} item gave {got}"


def _narrowings(world: World, case: Case) -> dict[str, tuple[Case, Callable[[], None]]]:
    """Ways the authority shrinks between submission and consolidation: the narrowed case and
    the change to make. No service edits a credential's authority (it is fixed at issue), so
    the rows are changed by hand, as an operator's edit in the database would."""
    connection, project = world.connection(case), world.project(case)

    def withdraw(data_class: str) -> tuple[Case, Callable[[], None]]:
        def apply() -> None:
            remaining = [c for c in connection.data_classes if c != data_class]
            Connection.objects.filter(pk=connection.pk).update(data_classes=remaining)

        return replace(case, granted=tuple(c for c in case.granted if c != data_class)), apply

    def delist() -> None:
        Connection.objects.filter(pk=connection.pk).update(all_projects=False)
        connection.projects.set([world.decoy])

    def reclassify() -> None:
        Project.objects.filter(pk=project.pk).update(data_class="restricted")

    return {
        "unchanged": (case, lambda: None),
        **{f"{data_class} withdrawn": withdraw(data_class) for data_class in case.granted},
        "the project taken off the list": (replace(case, listing="unlisted"), delist),
        "the project reclassified restricted": (replace(case, project_class="restricted"), reclassify),
    }


ACCEPTED = [case for case in CASES if expected_submission(case) == "accepted"]


@pytest.mark.parametrize("case", ACCEPTED, ids=str)
def test_consolidator_rejects_what_a_narrowed_credential_may_no_longer_write(
    world: World, case: Case
) -> None:
    """An add and an update of a visible item of each class, submitted, then the credential
    narrowed (or not), then one consolidation: each is decided as the narrowed rule says."""
    scope, project = world.scope(case), world.project(case)
    targets: list[str | None] = [None, *(c for c in ITEM_CLASSES if expected_item_visible(case, c))]
    for what, (narrowed, narrow) in _narrowings(world, case).items():
        with rolled_back():
            proposals = {
                target_class: _submit(
                    scope,
                    project,
                    world.items[(case.tenant, case.project_class, target_class)][0] if target_class else None,
                )
                for target_class in targets
            }
            narrow()
            proposal_consolidate(workspace_id=world.own.pk)  # one batch: all of them
            decided = {
                target_class: (
                    *Proposal.objects.values_list("status", "reason").get(pk=proposal.pk),
                    Fact.objects.filter(proposal=proposal).exists(),
                )
                for target_class, proposal in proposals.items()
            }
        for target_class, (status, reason, published) in decided.items():
            change = f"update_fact of a {target_class} item" if target_class else "add_fact"
            want = expected_decision(narrowed, target_class)
            assert (status, reason) == want, f"{case}, {change}, {what}: decided {(status, reason)}"
            assert published == (want[0] == "published"), f"{case}, {change}, {what}: item published"
