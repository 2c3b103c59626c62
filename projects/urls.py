"""Pages and scripts of the projects app: accounts, orgs, the token wizard and the installers."""

from django.urls import include, path

from projects import views_accounts, views_onboard, views_orgs, views_tokens

urlpatterns = [
    path("accounts/", include(views_accounts.urlpatterns)),
    *views_orgs.urlpatterns,
    *views_tokens.urlpatterns,
    *views_onboard.urlpatterns,
]
