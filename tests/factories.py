"""factory_boy factories for plain rows. Domain states come from the real services."""

from __future__ import annotations

import factory
from django.contrib.auth.models import User

from memory.models import Fact, Kind
from workspaces.models import DataClass, Project


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.django.Password("correct-horse-battery")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    slug = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda p: p.slug.replace("-", " ").title())
    data_class = DataClass.INTERNAL


class FactFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Fact

    project = factory.SubFactory(ProjectFactory)
    workspace = factory.LazyAttribute(lambda f: f.project.workspace)
    kind = Kind.FACT
    text = factory.Sequence(lambda n: f"Fact number {n} about the platform.")
    state = factory.LazyAttribute(lambda f: Kind.live_state(f.kind))
    data_class = factory.LazyAttribute(lambda f: f.project.data_class)
    source = "tests"
    actor = "tester"
