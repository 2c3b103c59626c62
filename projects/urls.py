"""Pages and scripts of the projects app: accounts, orgs, the token wizard and the installers."""

from django.contrib.auth import views as auth_views
from django.urls import include, path, reverse_lazy

from projects.forms import ThrottledLoginForm
from projects.views import accounts, onboard, orgs, signin, tokens

_T = "accounts/"

_accounts = [
    path("signup/", accounts.signup, name="signup"),
    path("signup/verify/<uidb64>/<token>/", accounts.signup_verify, name="signup_verify"),
    path("login/", signin.SignInView.as_view(
        template_name=_T + "login.html", authentication_form=ThrottledLoginForm, redirect_authenticated_user=True,
    ), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/change/", auth_views.PasswordChangeView.as_view(
        template_name=_T + "password_change.html", success_url=reverse_lazy("password_change_done"),
    ), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(
        template_name=_T + "password_change_done.html",
    ), name="password_change_done"),
    path("password/reset/", accounts.PasswordResetView.as_view(
        template_name=_T + "password_reset.html", email_template_name=_T + "password_reset_email.txt",
        subject_template_name=_T + "password_reset_subject.txt", success_url=reverse_lazy("password_reset_done"),
    ), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(
        template_name=_T + "password_reset_sent.html",
    ), name="password_reset_done"),
    path("password/reset/<uidb64>/<token>/", accounts.PasswordResetConfirmView.as_view(
        template_name=_T + "password_reset_confirm.html", success_url=reverse_lazy("password_reset_complete"),
    ), name="password_reset_confirm"),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(
        template_name=_T + "password_reset_done.html",
    ), name="password_reset_complete"),
]

urlpatterns = [
    path("accounts/", include(_accounts)),
    path("orgs/", orgs.org_list, name="org_list"),
    path("orgs/<slug:slug>/", orgs.org_detail, name="org_detail"),
    path("orgs/<slug:slug>/invite", orgs.org_invite, name="org_invite"),
    path("orgs/<slug:slug>/review", orgs.org_review_toggle, name="org_review_toggle"),
    path("orgs/<slug:slug>/invitations/<uuid:invitation_id>/revoke", orgs.org_invitation_revoke,
         name="org_invitation_revoke"),
    path("orgs/<slug:slug>/members/<uuid:membership_id>/role", orgs.org_member_role, name="org_member_role"),
    path("orgs/<slug:slug>/members/<uuid:membership_id>/remove", orgs.org_member_remove, name="org_member_remove"),
    path("invitations/<str:raw>/", orgs.invitation_accept_view, name="invitation_accept"),
    path("settings/tokens", tokens.tokens, name="tokens"),
    path("settings/tokens/<uuid:token_id>/revoke", tokens.token_revoke_view, name="token_revoke"),
    path("settings/setup", tokens.setup_guide, name="setup_guide"),
    path("api/onboard.sh", onboard.onboard_sh, name="onboard_sh"),
    path("api/onboard.ps1", onboard.onboard_ps1, name="onboard_ps1"),
]
