// Prints, as JSON, every span attribute key the analysis service's sources set, read with the
// TypeScript compiler (the one the service builds with), for tests/deploy/test_trace_attributes.py:
// {"keys": [{key, where}], "dynamic": [{where, text}]}. A key that is not a string literal is
// "dynamic": the test fails on it, since no table can be checked against a key built at run time.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const serviceDir = process.argv[2];
const ts = require(path.join(serviceDir, 'node_modules', 'typescript'));
const sourceDir = path.join(serviceDir, 'src');

function sources(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'gen' ? [] : sources(full); // generated stubs set none
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

const keys = [];
const dynamic = [];

function where(file, node) {
  const { line } = node.getSourceFile().getLineAndCharacterOfPosition(node.getStart());
  return `${path.relative(path.dirname(serviceDir), file)}:${line + 1}`;
}

function literalKeys(file, object) {
  if (!ts.isObjectLiteralExpression(object)) {
    dynamic.push({ where: where(file, object), text: object.getText() });
    return;
  }
  for (const property of object.properties) {
    const name = property.name;
    if (ts.isPropertyAssignment(property) && name && (ts.isStringLiteral(name) || ts.isIdentifier(name))) {
      keys.push({ key: name.text, where: where(file, property) });
    } else {
      dynamic.push({ where: where(file, property), text: property.getText() });
    }
  }
}

for (const file of sources(sourceDir)) {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const [first, second] = node.arguments;
      if (method === 'setAttribute' && first) {
        if (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first)) {
          keys.push({ key: first.text, where: where(file, first) });
        } else {
          dynamic.push({ where: where(file, first), text: first.getText() });
        }
      } else if (method === 'setAttributes' && first) {
        literalKeys(file, first);
      } else if ((method === 'startActiveSpan' || method === 'startSpan') && second
                 && ts.isObjectLiteralExpression(second)) {
        for (const option of second.properties) {
          if (option.name && option.name.getText() === 'attributes') {
            literalKeys(file, ts.isPropertyAssignment(option) ? option.initializer : option);
          }
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

process.stdout.write(JSON.stringify({ keys, dynamic }));
