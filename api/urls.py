from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from api import views as api

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("projects/", api.ProjectList.as_view(), name="projects"),
    path("projects/<str:project_id>/context/", api.ProjectContext.as_view(), name="context"),
    path("projects/<str:project_id>/search/", api.ProjectSearch.as_view(), name="search"),
    path("projects/<str:project_id>/snapshot.md", api.ProjectSnapshot.as_view(), name="snapshot"),
]
