// Who may do what to a local training job (`vigil train`): an access policy in IAM's JSON policy
// grammar, bound to local users, parsed once and then asked per request. Pure logic: the only I/O is
// reading the policy files.
//
// The file (a Vigil "bindings" file):
//   {
//     "Bindings": [
//       {"Users": ["alice", "1001"], "Policy": { an IAM policy document, exactly as IAM writes it }},
//       {"Users": ["*"], "PolicyFile": "deny-remote-debug.json"}
//     ]
//   }
// - `Users`: a list (or one string) of local user names, numeric uids written as strings ("1001"), or
//   "*" for every user. An entry of digits only is a uid, never a name.
// - Exactly one of `Policy` (an inline policy document) and `PolicyFile` (a path to a file holding
//   one; a relative path is relative to the bindings file's folder) per binding.
// - A user's effective policy is the union of the statements of every binding that names them (by
//   name, by uid, or "*").
// - A bare IAM policy document (an object with `Statement`, `Version` or `Id`) is also accepted as the
//   whole file: it then applies to every user, as if bound to "*".
//
// The policy grammar (IAM's identity policies):
// - Document: `Version` ("2012-10-17" or "2008-10-17", may be absent), `Id` (ignored), `Statement`
//   (one statement or a non-empty list).
// - Statement: `Sid` (optional; ASCII letters and digits, unique in its document, as IAM requires),
//   `Effect` ("Allow" | "Deny"), exactly one of `Action`/`NotAction`, exactly one of
//   `Resource`/`NotResource` (each a string or a non-empty list), optional `Condition`. `Principal`
//   and `NotPrincipal` are refused: Users names who a policy is for.
// - Actions ("service:Name" or "*") match case-insensitively, resources ("arn:..." or "*")
//   case-sensitively; both take the wildcards `*` (any run of characters, none included) and `?`
//   (one character; one byte, as names here are ASCII).
// - Condition: {"<Operator>": {"<key>": value or list of values, ...}, ...}. Operators AND together,
//   the keys of one operator AND together, the values of one key OR together (for the negated
//   operators: the request's value must match none of them). Keys match case-insensitively.
//   Operators: StringEquals, StringNotEquals, StringEqualsIgnoreCase, StringNotEqualsIgnoreCase,
//   StringLike, StringNotLike, Bool, NumericEquals, NumericNotEquals, NumericLessThan,
//   NumericLessThanEquals, NumericGreaterThan, NumericGreaterThanEquals, each also with the suffix
//   IfExists (a key missing from the request then counts as a match), and Null (true: the key is
//   missing; false: it is present). Without IfExists a missing key fails the condition, for the
//   negated operators too. Document values are strings, booleans or numbers (`false` and "false"
//   alike). A request value that is not a number fails a Numeric test, and one that is not
//   "true"/"false" (any case) a Bool test, whatever the operator.
// - Not supported, and refused with a message rather than misread: policy variables ("${...}") in a
//   2012-10-17 document, the ForAnyValue:/ForAllValues: set operators, and IAM's other operator
//   families (Date*, IpAddress, Arn*, Binary).
// - Decision, as IAM decides: a matching Deny statement is an explicit deny and wins; otherwise a
//   matching Allow allows; otherwise the request is implicitly denied.
//
// A malformed file is an Error::invalid_argument whose message starts "MalformedPolicyDocument: " and
// names the file and the place in it ("...: Bindings[1].Policy.Statement[2].Effect: ..."); list
// indices count from 0. An unreadable bindings file (load) is an Error::io.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

namespace vigil::remote_debug {

// One question put to the policy.
struct AccessRequest {
  std::string action;    // "ssm:StartSession"
  std::string resource;  // an ARN
  // Condition keys -> values ("ssm:resourceTag/aws:ssmmessages:target-id" -> "sagemaker-training-job:x_algo-1");
  // booleans as "true"/"false". Key case does not matter; one key should appear in one case only.
  std::map<std::string, std::string> context;
};

enum class AccessDecision { Allowed, ExplicitDeny, ImplicitDeny };

// "Allowed", "ExplicitDeny", "ImplicitDeny" (a static string).
[[nodiscard]] std::string_view access_decision_name(AccessDecision decision);

// The answer, with the statement that gave it, for audit logs.
struct AccessVerdict {
  AccessDecision decision = AccessDecision::ImplicitDeny;
  // The deciding statement's Sid, or where it stands when it has none ("Statement[1]",
  // "Bindings[0].Policy.Statement[1]", "deny.json: Statement[0]" for a statement of a PolicyFile);
  // empty for an implicit deny.
  std::string statement;
  [[nodiscard]] bool allowed() const { return decision == AccessDecision::Allowed; }
};

// Who asks: the kernel-checked uid and its passwd name.
struct LocalUser {
  uint32_t uid = 0;
  std::string name;
};

// A parsed bindings file. Immutable once parsed: copies share the parsed rules, and decide() may be
// called from several threads at once.
class AccessPolicy {
 public:
  // `json_text` is the bindings file's content (or a bare policy document); `source` names the file in
  // messages and anchors relative PolicyFile paths (which are read here). Nothing is kept of either.
  [[nodiscard]] static Result<AccessPolicy> parse(std::string_view json_text, const std::filesystem::path& source);
  // Reads `file` and parses it.
  [[nodiscard]] static Result<AccessPolicy> load(const std::filesystem::path& file);

  // What the policy says to `who` asking `request`.
  [[nodiscard]] AccessVerdict decide(const LocalUser& who, const AccessRequest& request) const;

  // Whether a binding that names someone other than `owner` (another name, another uid, or "*") holds
  // an Allow statement: whether users other than the owner may be granted anything, so whether they
  // must be able to reach the job's socket. A binding that only denies grants nothing.
  [[nodiscard]] bool grants_users_other_than(const LocalUser& owner) const;
  // Whether a binding that names `who` (by name, by uid, or "*") holds an Allow statement: whether
  // `who` may be allowed anything at all, so may hold a connection to the job's socket.
  [[nodiscard]] bool may_grant_anything_to(const LocalUser& who) const;

  struct Rules;  // the parsed bindings (access_policy.cpp)

 private:
  explicit AccessPolicy(std::shared_ptr<const Rules> rules) : rules_(std::move(rules)) {}
  std::shared_ptr<const Rules> rules_;
};

}  // namespace vigil::remote_debug
