-- Each service's own database, owned by the role the services connect as (POSTGRES_USER, insta).
-- The services create and migrate their schemas on start. Run once, by the postgres image's
-- entrypoint on an empty data directory (compose.postgres.yaml; k8s/postgres/ holds a copy of
-- this file in the ConfigMap insta-postgres-init, which scripts/check-deploy keeps identical).
CREATE DATABASE insta_auth;
CREATE DATABASE insta_profile;
CREATE DATABASE insta_notification;
