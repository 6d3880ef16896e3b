// Package jaas parses the value of Kafka's sasl.jaas.config (and
// listener.name.<listener>.<mechanism>.sasl.jaas.config) exactly as
// Kafka's org.apache.kafka.common.security.JaasConfig does, so that a
// value copied from a Kafka server.properties means the same here:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required
//	    username="admin" password="admin-secret"
//	    user_admin="admin-secret" user_alice="alice-secret";
//
// Kafka reads the value with java.io.StreamTokenizer; this package
// reproduces that tokenizer with Kafka's settings:
//
//   - Words are runs of letters, digits, '.', '-', '_' and '$' that start
//     with a letter, '_' or '$' (characters above U+00FF count as letters).
//     A token that starts with a digit or '.' is a number, which is not a
//     valid key or value: quote such values.
//   - Strings are quoted with " or ' and end at the matching quote, a line
//     break, or the end of the input; inside, \n \t \r \b \f \a \v, octal
//     \ooo (up to \377) and \<any other character> (that character) are
//     escapes.
//   - Comments: // and a lone / run to the end of the line; /* */ blocks.
//   - Whitespace (anything up to and including ' ') separates tokens.
//
// Entries are "LoginModule flag key=value ... ;", one or more. Errors name
// keys, never values: values are passwords.
package jaas
