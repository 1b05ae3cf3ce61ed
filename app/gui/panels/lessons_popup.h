// The top bar's "Lessons" button: the shipped lessons (assets/lessons), each in the language of the app's words
// where it has a version in it.
//
// A lesson comes as one file per language: NAME.lesson (English) and NAME.ko.lesson, NAME.zh.lesson (the same
// commands, the captions translated; docs/user-guide.md "Lessons"). The popup lists each NAME once: the file of
// the current language, else the English one, marked "(in English)". A lesson's name is its `title` line.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gui/text/text.h"

namespace sf::gui {

struct LessonEntry {
  std::string name;     // "walkthrough"
  std::string path;     // the file in the language chosen, else the English one
  std::string title;    // its `title` line ("" when it has none: the name is shown)
  int pauses = 0;       // its `pause` lines
  bool in_language = false;  // the file is in the language asked for (English asked: always)
};

// The lessons in `folder`, by name, each in `language` where it has that version. A file the script parser cannot
// read (not a regular file, over its size limit: gui/script/script_parse.h) is left out.
std::vector<LessonEntry> find_lessons(const std::string& folder, Language language);
// The folder of the shipped lessons: assets/lessons beside the shipped models.
std::string shipped_lessons_folder();

class LessonsPopup {
 public:
  // Draws the button and its popup; returns the lesson file the user picked, once.
  std::optional<std::string> draw(const std::string& folder, Language language);

 private:
  std::vector<LessonEntry> lessons_;  // read when the popup opens
};

}  // namespace sf::gui
