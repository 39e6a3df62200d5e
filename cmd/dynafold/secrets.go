package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dynafold/dynafold/internal/redact"
)

// Everything a run prints and every report it writes passes through one
// redact.Redactor, a.secrets: execute wraps stdout and stderr (the console,
// log lines, progress and the final error go through them), and
// finishReport redacts --report as it is marshalled. So an error an
// endpoint sends back ("The security token included in the request is
// invalid: AKIA…") is redacted wherever it ends up, without each call site
// remembering to. It knows the AWS credentials of the environment from the
// start and those each client signs with once the client is built
// (learnCredentials); it also replaces anything shaped like an AWS key id,
// a session token or a named secret key. A source DSN's password is not
// among them: source.DSN redacts itself and the driver errors it wraps,
// and replacing a password everywhere would also replace it where it is
// a word ("dynafold" in .dynafold/). What a command prints as data
// (dump's items) goes to a.data, which is not redacted: a row's values
// are printed as they are.

// newSecrets is a run's Redactor, with the environment's AWS credentials.
func newSecrets() *redact.Redactor {
	r := redact.New()
	r.AddEnv(os.LookupEnv)
	return r
}

// credentialsWait bounds asking a client's credential chain for what it
// signs with. The chain caches its answer for the client, so this costs
// nothing more than the client's first request would; the bound only
// meets a chain that has no credentials to give (the EC2 metadata service
// that does not answer off EC2).
const credentialsWait = 2 * time.Second

// learnCredentials adds the credentials p gives (a client's, which may
// come from a profile, SSO or a web identity rather than the environment)
// to the secrets. The dummy credentials a local endpoint is signed with
// when the chain has none are not secret.
func (a *app) learnCredentials(ctx context.Context, p aws.CredentialsProvider) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, credentialsWait)
	defer cancel()
	c, err := p.Retrieve(ctx)
	if err != nil || c.Source == credentials.StaticCredentialsName {
		return
	}
	a.secrets.AddAWS(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)
}
